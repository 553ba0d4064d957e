package record

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// script makes kind's script for seed, as Record does.
func scriptOf(t *testing.T, k Kind, seed uint64) script {
	t.Helper()
	e := &env{dir: t.TempDir(), w: 1280, h: 720, rng: rand.New(rand.NewPCG(seed, 1)), windows: []uint32{10, 11, 12, 13}}
	return k.script(e, 20*time.Second)
}

// Every kind's script comes from its seed alone: the same seed, the same
// actions; another seed, other ones (where it picks anything). Actions are
// in order and inside the recording, and each kind says what it does.
func TestScriptsAreSeeded(t *testing.T) {
	for _, k := range Kinds() {
		t.Run(k.Name, func(t *testing.T) {
			a, b, c := scriptOf(t, k, 1), scriptOf(t, k, 1), scriptOf(t, k, 2)
			require.Equal(t, a, b)
			require.NotEmpty(t, a.words)
			require.NotEmpty(t, k.About)
			require.NotEmpty(t, k.Packages)
			if len(a.actions) > 0 {
				require.NotEqual(t, a.actions, c.actions)
			}
			for i, x := range a.actions {
				require.Less(t, x.at, 20*time.Second)
				if i > 0 {
					require.GreaterOrEqual(t, x.at, a.actions[i-1].at)
				}
			}
		})
	}
	_, err := Lookup("spreadsheet")
	require.ErrorContains(t, err, `unknown kind "spreadsheet" (terminal-typing, editor-typing,`)
}

func TestCommand(t *testing.T) {
	require.Equal(t, "lab record -kind idle -size 1280x720 -duration 20s -rate 60 -seed 1 -out x.labrec",
		Command(Config{Kind: "idle", Out: "x.labrec"}))
	require.Equal(t, "lab record -kind 3d -size 640x360 -duration 2.5s -rate 30 -seed 7 -out y",
		Command(Config{Kind: "3d", Width: 640, Height: 360, Duration: 2500 * time.Millisecond, Rate: 30, Seed: 7, Out: "y"}))
}
