package scenarios

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A phase's mistakes are reported on the body's own lines and fields, not
// on those of the scenario it is wrapped in.
func TestParsePhase(t *testing.T) {
	sc, err := ParsePhase([]byte("{delay: 50ms, loss: 2%}"))
	require.NoError(t, err)
	require.Len(t, sc.Network.Up, 1)
	require.Equal(t, sc.Network.Up, sc.Network.Down)
	require.Equal(t, 50*time.Millisecond, sc.Network.Up[0].Delay)

	_, err = ParsePhase([]byte("delay: 50ms\nloss: 2 percent\n"))
	require.ErrorContains(t, err, "line 2: loss")
	require.NotContains(t, err.Error(), "network.both")
	// Not the last line, which a syntax error at the end clamps to.
	_, err = ParsePhase([]byte("loss: 2 percent\ndelay: 50ms\n"))
	require.ErrorContains(t, err, "line 1: loss")

	_, err = ParsePhase([]byte("- {delay: 1ms}\n- {at: 500ms, delay: 2ms}\n"))
	require.ErrorContains(t, err, "expected one phase")
}

// FuzzParsePhase: whatever a client PUTs to lab proxy's API, the parser
// answers without panicking: one phase, the same in both directions, or
// an error whose line numbers are the body's.
//
//	go test ./scenarios -run '^$' -fuzz FuzzParsePhase
func FuzzParsePhase(f *testing.F) {
	for _, s := range []string{"{delay: 50ms, loss: 2%}", "{rate: 5Mbit/s, queue: {packets: 100}}", "{delay: 5}", "", "- a\n- b", "{jitter: {spread: 10ms, correlation: 50%}}"} {
		f.Add([]byte(s))
	}
	lineRef := regexp.MustCompile(`line (\d+): `)
	f.Fuzz(func(t *testing.T, body []byte) {
		sc, err := ParsePhase(body)
		if err != nil {
			require.Nil(t, sc)
			lines := strings.Count(strings.TrimRight(string(body), "\n"), "\n") + 1
			for _, m := range lineRef.FindAllStringSubmatch(err.Error(), -1) {
				n, _ := strconv.Atoi(m[1])
				require.LessOrEqual(t, n, lines, "%q: %v", body, err)
			}
			return
		}
		require.Len(t, sc.Network.Up, 1, "%q", body)
		require.Equal(t, sc.Network.Up, sc.Network.Down, "%q", body)
	})
}
