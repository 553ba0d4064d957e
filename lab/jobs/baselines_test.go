package jobs

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/lab/jobspec"
	"github.com/nuvirahub/latencylab/reports"
	"github.com/nuvirahub/latencylab/scenarios"
)

// The committed baselines are the library's as it is: every scenario has
// one, made from the scenario as written (its fingerprint), under the
// configuration as written, at the nightly's seeds, from a commit; and no
// baseline is left of a scenario that is gone. So a change to a scenario
// is accepted again in the same change, and the nightly never compares a
// scenario with runs of another.
func TestBaselinesMatchTheLibrary(t *testing.T) {
	root, err := ModuleRoot()
	require.NoError(t, err)
	baselines, err := reports.ReadBaselines(filepath.Join(root, DefaultBaselines))
	require.NoError(t, err)
	lib, err := jobspec.Select("", nil)
	require.NoError(t, err)
	accept := func(name string) string {
		return "commit the change, then accept it (go run ./cmd/lab accept -scenario " + name +
			", or make accept-baseline for the whole library) and commit " + DefaultBaselines + "/" + name + ".json with it"
	}
	for _, sc := range lib {
		b := baselines[sc.Name]
		if b == nil {
			t.Errorf("%s: no baseline in %s: %s", sc.Name, DefaultBaselines, accept(sc.Name))
			continue
		}
		if fp := reports.Fingerprint(sc); b.Fingerprint != fp {
			t.Errorf("%s: the scenario changed since its baseline was accepted (fingerprint %s, now %s), "+
				"so the nightly compares it with runs of the scenario as it was: %s", sc.Name, b.Fingerprint, fp, accept(sc.Name))
		}
		if b.Variant != jobspec.AsWritten {
			t.Errorf("%s: baseline made under configuration %q, not %s: %s", sc.Name, b.Variant, jobspec.AsWritten, accept(sc.Name))
		}
		var seeds []uint64
		for _, r := range b.Runs {
			seeds = append(seeds, r.Seed)
		}
		if !slices.Equal(seeds, DefaultSeeds) {
			t.Errorf("%s: baseline of seeds %v, the nightly runs %v: %s", sc.Name, seeds, DefaultSeeds, accept(sc.Name))
		}
		if b.Commit == "" || strings.HasSuffix(b.Commit, "-dirty") {
			t.Errorf("%s: baseline accepted from %q, no commit: %s", sc.Name, b.Commit, accept(sc.Name))
		}
	}
	for name := range baselines {
		if !slices.ContainsFunc(lib, func(sc *scenarios.Scenario) bool { return sc.Name == name }) {
			t.Errorf("%s: a baseline without a scenario in the library: accepting the whole library removes it (make accept-baseline), or delete %s/%s.json", name, DefaultBaselines, name)
		}
	}
}

// Accepting refuses a work tree with uncommitted changes before any
// session runs, and says how to go on; -allow-dirty accepts anyway, and
// the baselines say "-dirty". A clean tree's baselines name its commit.
func TestAcceptRefusesADirtyTree(t *testing.T) {
	_, err := exec.LookPath("git")
	require.NoError(t, err, "accept describes the work tree with git; install it")
	root := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=lab", "-c", "user.email=lab@example.invalid"}, args...)...)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return strings.TrimSpace(string(out))
	}
	tracked := filepath.Join(root, "tracked.txt")
	require.NoError(t, os.WriteFile(tracked, []byte("first\n"), 0o644))
	git("init", "-q")
	git("add", "tracked.txt")
	git("commit", "-q", "-m", "first")
	head := git("describe", "--always")

	o := NightlyOptions{Root: root, Seeds: []uint64{1}, Baselines: "bl", Out: "out", Scenarios: []string{"still-refine"}, Accept: true}
	baseline := func() *reports.Baseline {
		t.Helper()
		bl, err := reports.ReadBaselines(filepath.Join(root, "bl"))
		require.NoError(t, err)
		require.Contains(t, bl, "still-refine")
		return bl["still-refine"]
	}
	run, err := Nightly(t, o)
	require.NoError(t, err, "a clean tree")
	require.Equal(t, 1, run.Accepted)
	require.Equal(t, head, baseline().Commit)

	require.NoError(t, os.WriteFile(tracked, []byte("changed\n"), 0o644))
	o.Out = "out-refused"
	_, err = Nightly(t, o)
	require.ErrorIs(t, err, ErrDirty)
	require.ErrorContains(t, err, head+"-dirty")
	require.ErrorContains(t, err, "Commit the change first")
	require.ErrorContains(t, err, "lab accept -allow-dirty")
	require.Equal(t, head, baseline().Commit, "nothing written")
	require.NoDirExists(t, filepath.Join(root, "out-refused"), "refused before any session ran")

	o.AllowDirty = true
	run, err = Nightly(t, o)
	require.NoError(t, err, "told to accept anyway")
	require.Equal(t, 1, run.Accepted)
	require.Equal(t, head+"-dirty", baseline().Commit)

	// The nightly itself runs in any tree.
	o.Accept, o.AllowDirty, o.Out = false, false, "out-nightly"
	_, err = Nightly(t, o)
	require.NoError(t, err)
}
