package filetest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/internal/modroot"
	"github.com/nuvirahub/latencylab/scenarios"
)

// write makes the files (path -> contents) under dir.
func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	}
}

func names(scs []*scenarios.Scenario) []string {
	var out []string
	for _, sc := range scs {
		out = append(out, sc.Name)
	}
	return out
}

// A folder is its *.yaml files but defaults.yaml, in name order, with its
// defaults beneath each; a file in a folder without defaults has the
// library's; a file named twice loads once; -defaults replaces them all.
func TestLoadFoldersFilesAndDefaults(t *testing.T) {
	dir := t.TempDir()
	in := func(p string) string { return filepath.Join(dir, p) }
	write(t, dir, map[string]string{
		"team/defaults.yaml": "duration: 3s\nseed: 7\n",
		"team/y.yaml":        "name: y\ndescription: d\n",
		"team/x.yaml":        "name: x\ndescription: d\nseed: 2\n",
		"team/notes.txt":     "not a scenario",
		"team/old/z.yaml":    "name: z\ndescription: d\n", // a subfolder is not read
		"mine/w.yaml":        "name: w\ndescription: d\n",
		"base.yaml":          "duration: 5s\n",
	})
	scs, err := Load([]string{in("team"), in("mine/w.yaml"), in("team/x.yaml")}, "")
	require.NoError(t, err)
	require.Equal(t, []string{"x", "y", "w"}, names(scs))
	require.Equal(t, in("team/x.yaml"), scs[0].File, "the path as given")
	require.Equal(t, 3*time.Second, scs[0].Duration, "the folder's defaults")
	require.Equal(t, uint64(2), scs[0].Seed, "the file's own value wins")
	require.Equal(t, uint64(7), scs[1].Seed)
	require.Equal(t, 20*time.Second, scs[2].Duration, "the library's defaults: its folder has none")
	require.Equal(t, "animation", scs[2].Screen[0].Source, "the library's defaults: its screen")

	scs, err = Load([]string{in("team"), in("mine")}, in("base.yaml"))
	require.NoError(t, err)
	for _, sc := range scs {
		require.Equal(t, 5*time.Second, sc.Duration, "%s: -defaults replaces every folder's", sc.Name)
	}
	require.Equal(t, uint64(0), scs[1].Seed, "y: the folder's defaults are not read beneath -defaults")
}

// Every mistake of every file comes at once, as file:line: field: message,
// the ones of a defaults file once, naming the file they are in; the
// scenarios that loaded come back beside them.
func TestLoadReportsEveryMistake(t *testing.T) {
	dir := t.TempDir()
	in := func(p string) string { return filepath.Join(dir, p) }
	write(t, dir, map[string]string{
		"a/one.yaml":      "name: one\ndescription: d\nduration: 4\nnetwork:\n  both: {delay: 10ms, los: 1%}\n",
		"a/two.yaml":      "name: two\ndescription: d\nexpect:\n  - {measure: latency.mediam, max: 50ms}\n",
		"a/good.yaml":     "name: good\ndescription: d\n",
		"a/same.yaml":     "name: good\ndescription: d\n",
		"a/three.yml":     "name: three\ndescription: d\n",
		"b/defaults.yaml": "seed: 1\n",
		"shared.yaml":     "duraton: 3s\n",
		"c/p.yaml":        "name: p\ndescription: d\n",
		"c/q.yaml":        "name: q\ndescription: d\n",
		"empty/README":    "nothing here",
	})
	scs, err := Load([]string{in("a"), in("nowhere"), in("b/defaults.yaml"), in("empty")}, "")
	require.Equal(t, []string{"good"}, names(scs), "what loaded comes back")
	var got []string
	for _, e := range scenarios.Errors(err) {
		got = append(got, strings.ReplaceAll(e.Error(), dir+string(filepath.Separator), ""))
	}
	require.Equal(t, []string{
		`a/one.yaml:3: duration: 4 is missing a unit: expected a duration like 25ms, 1.5s or 500us`,
		`a/one.yaml:5: network.both.los: unknown key "los": did you mean loss? allowed keys: at, delay, jitter, loss, gilbert, duplicate, corrupt, rate, overhead, trace, queue, spikes, outages, block_udp`,
		"a/same.yaml:1: name: duplicate name good: a/good.yaml:1 has it too (results are named after their scenario)",
		"a/three.yml: scenario files end in .yaml: rename it, or it is not loaded",
		`a/two.yaml:4: expect[0].measure: unknown measurement "latency.mediam": did you mean latency.median? expected one of ` + strings.Join(measurementNames(), ", "),
		"nowhere: no such file or folder: expected a scenario file or a folder of them",
		"b/defaults.yaml: defaults.yaml holds the folder's defaults, not a scenario: name the scenario files or their folder",
		"empty: no scenario file (*.yaml but defaults.yaml) in this folder",
	}, got)

	// A mistake in a defaults file named with -defaults names that file,
	// once for the two scenarios that inherit it.
	_, err = Load([]string{in("c")}, in("shared.yaml"))
	var inShared []string
	for _, e := range scenarios.Errors(err) {
		require.NotEqual(t, in("c/defaults.yaml"), e.File, "a file that does not exist")
		if e.File == in("shared.yaml") {
			inShared = append(inShared, e.Error())
		}
	}
	require.Len(t, inShared, 1, "%v", err)
	require.Contains(t, inShared[0], in("shared.yaml")+`:1: duraton: unknown key "duraton": did you mean duration?`)

	_, err = Load(nil, "")
	require.ErrorContains(t, err, "no scenario file or folder named")
	_, err = Load([]string{in("c")}, in("missing.yaml"))
	require.EqualError(t, err, in("missing.yaml")+": the defaults file does not open: no such file or folder")
}

func measurementNames() []string {
	var out []string
	for _, m := range scenarios.Measurements {
		out = append(out, m.Name)
	}
	return out
}

// A file named directly may sit anywhere, with any name; only
// defaults.yaml is refused, being no scenario.
func TestLoadNamedFile(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"x/my.scenario": "name: mine\ndescription: d\nduration: 2s\n"})
	scs, err := Load([]string{filepath.Join(dir, "x", "my.scenario")}, "")
	require.NoError(t, err)
	require.Equal(t, []string{"mine"}, names(scs))
	require.Equal(t, 2*time.Second, scs[0].Duration)
}

// The worked example of docs/own-scenarios.md loads: the page runs it.
func TestDocsExampleLoads(t *testing.T) {
	root, err := modroot.Find()
	require.NoError(t, err)
	scs, err := Load([]string{filepath.Join(root, "docs", "own-scenarios")}, "")
	require.NoError(t, err)
	require.Equal(t, []string{"home-office", "train-wifi"}, names(scs))
}
