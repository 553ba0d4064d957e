package tune

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/lab/sweep"
	"github.com/nuvirahub/latencylab/lab/sweep/grid"
)

// fakeFigures stands in for a session: the measures a candidate would
// get, a smooth function of its threshold and hold with its best at 30 ms
// and 0.8 s, a lower bitrate for a larger decrease, and a seed's draw.
func fakeFigures(p grid.Point, seed uint64) map[string]float64 {
	th := p.Threshold.Seconds()
	if th == 0 {
		th = 0.060
	}
	hold := p.Hold.Seconds()
	if hold == 0 {
		hold = 1.5
	}
	dec := p.Decrease
	if dec == 0 {
		dec = 0.2
	}
	l1, l2 := math.Log(th/0.030), math.Log(hold/0.8)
	return map[string]float64{
		"latency.median": 0.05,
		"latency.p95":    0.2 + 0.3*l1*l1 + 0.1*l2*l2 + 0.01*float64(seed),
		"bitrate.mean":   4e6 * (1 - 0.5*dec),
		"quality.final":  1,
		"freezes":        float64(seed) + 2*l1*l1,
	}
}

// fakeRun writes the pending step's part as if lab sweep had run its
// sessions (one shard of one, or shard i of n).
func fakeRun(t *testing.T, dir string, i, n int) {
	t.Helper()
	st, err := ReadStatus(dir)
	require.NoError(t, err)
	require.NotEmpty(t, st.Pending)
	g, err := grid.Load(st.Grid)
	require.NoError(t, err)
	pts, err := grid.Shard(g.Points(), i, n)
	require.NoError(t, err)
	part := &sweep.Part{Schema: sweep.PartSchema, Grid: g, Shard: sweep.ShardID{I: i, N: n}, Parallel: 1, Exact: true, Guest: "fake", Points: []sweep.PointResult{}}
	for _, p := range pts {
		pr := sweep.PointResult{Point: p}
		for _, sc := range g.Scenarios {
			for _, seed := range g.Seeds {
				pr.Runs = append(pr.Runs, sweep.RunResult{Scenario: sc, Seed: seed, Ran: 62 * time.Second, Measures: fakeFigures(p, seed)})
			}
		}
		part.Points = append(part.Points, pr)
	}
	_, err = sweep.WritePart(filepath.Join(dir, PendingDir, PartsDir), part)
	require.NoError(t, err)
}

func testSettings() Settings {
	ps, _ := ParamsByKey([]string{"threshold", "hold", "decrease"})
	return Settings{Params: ps, Scenarios: []string{"abr-lossy", "abr-spikes-fix"}, Seeds: []uint64{1, 2}, ValidationSeeds: []uint64{3},
		Warmup: 2 * time.Second, Weights: DefaultWeights, Population: 6, Generations: 6, Step: 0.3, Seed: 1, Exact: true}
}

// A whole tune on fake sessions, its steps run in shards as a cluster
// would: the search beats the write-up's values, and the report and
// snippet are written.
func TestTuneFindsABetterSetting(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, Ask(dir, testSettings()))
	steps := 0
	for {
		st, err := ReadStatus(dir)
		require.NoError(t, err)
		if st.Pending == "" {
			break
		}
		fakeRun(t, dir, 1, 2)
		fakeRun(t, dir, 2, 2)
		_, err = Tell(dir)
		require.NoError(t, err)
		steps++
		require.Less(t, steps, 20, "the tune does not end")
	}
	require.Equal(t, 7, steps, "six generations and the validation")
	for _, f := range []string{ReportBase + ".md", ReportBase + ".html", ConvergencePlot, FrontPlot, SnippetFile} {
		require.FileExists(t, filepath.Join(dir, ReportDir, f))
	}
	s, err := loadSettings(dir)
	require.NoError(t, err)
	all, err := loadSteps(dir)
	require.NoError(t, err)
	h, err := replay(s, all)
	require.NoError(t, err)
	defer h.srch.close()
	best, wu := h.evals[h.best], h.evals[0]
	require.True(t, wu.WriteUp)
	require.Less(t, best.Training.Score, wu.Training.Score-50, "the search should find a better threshold and hold than 60 ms and 1.5 s: best %s", best.Point.ID)
	require.Less(t, math.Abs(math.Log(best.Point.Threshold.Seconds()/0.030)), math.Log(60.0/30), "best threshold %s is no nearer 30 ms than the write-up's", best.Point.Threshold)
	// The validation ran the winner and the write-up's values on the
	// held-out seed too.
	vals := h.validated()
	require.Len(t, vals, 2)
	require.Equal(t, 2, vals[0].heldOut.Sessions)
	require.Less(t, vals[0].heldOut.Score, vals[1].heldOut.Score)
	snippet, err := os.ReadFile(filepath.Join(dir, ReportDir, SnippetFile))
	require.NoError(t, err)
	require.Contains(t, string(snippet), "controller: {kind: abr, threshold: "+best.Point.Threshold.String())
}

// The same settings propose the same candidates, whatever machine or
// process asks; another seed proposes others.
func TestAskIsDeterministic(t *testing.T) {
	read := func(s Settings) string {
		dir := t.TempDir()
		require.NoError(t, Ask(dir, s))
		data, err := os.ReadFile(filepath.Join(dir, PendingDir, GridFile))
		require.NoError(t, err)
		return string(data)
	}
	s := testSettings()
	a, b := read(s), read(s)
	require.Equal(t, a, b)
	require.Contains(t, a, "  - {threshold: 60ms, decrease: 20%, hold: 1500ms}\n", "the first generation runs the write-up's values first")
	s.Seed = 2
	require.NotEqual(t, a, read(s))
}

func TestTellRefusesWhatItCannotTrust(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, Ask(dir, testSettings()))
	_, err := Tell(dir)
	require.ErrorContains(t, err, "no part files in "+filepath.Join(dir, PendingDir, PartsDir))

	// Only one shard of two: Merge says which points are missing.
	gridFile := filepath.Join(dir, PendingDir, GridFile)
	fakeRun(t, dir, 1, 2)
	_, err = Tell(dir)
	require.ErrorIs(t, err, sweep.ErrCoverage)

	// A step whose candidates are not the search's.
	require.NoError(t, os.RemoveAll(filepath.Join(dir, PendingDir, PartsDir)))
	data, err := os.ReadFile(gridFile)
	require.NoError(t, err)
	g, err := grid.Parse(gridFile, data)
	require.NoError(t, err)
	g.Candidates[1].Hold = 777 * time.Millisecond
	require.NoError(t, os.WriteFile(gridFile, grid.Format(g), 0o644))
	fakeRun(t, dir, 1, 1)
	_, err = Tell(dir)
	require.ErrorContains(t, err, "candidate 2 is ")
	require.ErrorContains(t, err, "h777ms")

	// Nothing moved: the step is still pending.
	st, err := ReadStatus(dir)
	require.NoError(t, err)
	require.Equal(t, "01-generation", st.Pending)
	require.NoDirExists(t, filepath.Join(dir, StepsDir, "01-generation"))

	require.ErrorContains(t, Ask(dir, testSettings()), "already holds a tune")

	// A tell that stopped between moving its step and writing the next
	// leaves neither; the next tell writes it.
	again := t.TempDir()
	require.NoError(t, Ask(again, testSettings()))
	fakeRun(t, again, 1, 1)
	want, err := Tell(again)
	require.NoError(t, err)
	next, err := os.ReadFile(want.Grid)
	require.NoError(t, err)
	require.NoError(t, os.RemoveAll(filepath.Join(again, PendingDir)))
	_, err = ReadStatus(again)
	require.ErrorContains(t, err, "stopped between two steps: run lab tune -tell again")
	got, err := Tell(again)
	require.NoError(t, err)
	require.Equal(t, want.Pending, got.Pending)
	require.Equal(t, want.Note, got.Note)
	written, err := os.ReadFile(got.Grid)
	require.NoError(t, err)
	require.Equal(t, string(next), string(written))
}

func TestSettingsRefuseALeakyValidation(t *testing.T) {
	s := testSettings()
	s.ValidationSeeds = []uint64{2}
	s.HeldOut = []string{"abr-lossy"}
	s.Generations = 0
	s.Screen = -1
	err := s.Validate()
	require.ErrorContains(t, err, "seed 2 is both a training and a validation seed")
	require.ErrorContains(t, err, "scenario abr-lossy is both trained on and held out")
	require.ErrorContains(t, err, "generations 0: expected 1 or more")
	require.ErrorContains(t, err, "screen -1: expected the count of training seeds a candidate is first scored on")
	_, err = ParamsByKey([]string{"treshold"})
	require.ErrorContains(t, err, `unknown parameter "treshold"`)
}

// The grid's best point is scored on the grid's own sessions, against
// its point at the write-up's values.
func TestGridBestOf(t *testing.T) {
	g := grid.Grid{Threshold: []time.Duration{30 * time.Millisecond, 60 * time.Millisecond, 120 * time.Millisecond},
		Hold: []time.Duration{800 * time.Millisecond, 1500 * time.Millisecond}, Scenarios: []string{"abr-lossy"}, Seeds: []uint64{1, 2}, Warmup: 2 * time.Second}
	part := &sweep.Part{Schema: sweep.PartSchema, Grid: g, Shard: sweep.ShardID{I: 1, N: 1}, Exact: true, Guest: "fake"}
	for _, p := range g.Points() {
		pr := sweep.PointResult{Point: p}
		for _, seed := range g.Seeds {
			pr.Runs = append(pr.Runs, sweep.RunResult{Scenario: "abr-lossy", Seed: seed, Ran: 40 * time.Second, Measures: fakeFigures(p, seed)})
		}
		part.Points = append(part.Points, pr)
	}
	file, err := sweep.WritePart(t.TempDir(), part)
	require.NoError(t, err)
	gb, err := GridBestOf([]string{file}, DefaultWeights)
	require.NoError(t, err)
	require.Equal(t, 30*time.Millisecond, gb.Point.Threshold)
	require.Equal(t, 800*time.Millisecond, gb.Point.Hold)
	require.Equal(t, 6, gb.Points)
	require.Equal(t, 12, gb.Sessions)

	g.Threshold = g.Threshold[:1]
	part.Grid, part.Points = g, nil
	for _, p := range g.Points() {
		pr := sweep.PointResult{Point: p}
		for _, seed := range g.Seeds {
			pr.Runs = append(pr.Runs, sweep.RunResult{Scenario: "abr-lossy", Seed: seed, Ran: 40 * time.Second, Measures: fakeFigures(p, seed)})
		}
		part.Points = append(part.Points, pr)
	}
	file, err = sweep.WritePart(t.TempDir(), part)
	require.NoError(t, err)
	_, err = GridBestOf([]string{file}, DefaultWeights)
	require.ErrorContains(t, err, "no point at the write-up's values")
}

// Held-out scenarios run only in the validation, under every seed; the
// held-out figures are every session the search did not see.
func TestHeldOutScenariosRunOnlyInTheValidation(t *testing.T) {
	dir := t.TempDir()
	s := testSettings()
	s.HeldOut = []string{"abr-capacity-drop"}
	s.Generations = 1
	require.NoError(t, Ask(dir, s))
	g, err := grid.Load(filepath.Join(dir, PendingDir, GridFile))
	require.NoError(t, err)
	require.Equal(t, s.Scenarios, g.Scenarios, "the search runs the training scenarios only")
	require.Equal(t, s.Seeds, g.Seeds)
	fakeRun(t, dir, 1, 1)
	st, err := Tell(dir)
	require.NoError(t, err)
	require.Equal(t, "02-validation", st.Pending)
	g, err = grid.Load(st.Grid)
	require.NoError(t, err)
	require.Equal(t, []string{"abr-lossy", "abr-spikes-fix", "abr-capacity-drop"}, g.Scenarios)
	require.Equal(t, []uint64{1, 2, 3}, g.Seeds)
	fakeRun(t, dir, 1, 1)
	_, err = Tell(dir)
	require.NoError(t, err)

	loaded, err := loadSettings(dir)
	require.NoError(t, err)
	steps, err := loadSteps(dir)
	require.NoError(t, err)
	h, err := replay(loaded, steps)
	require.NoError(t, err)
	defer h.srch.close()
	v := h.validated()
	require.Equal(t, 4, v[0].training.Sessions, "2 training scenarios x 2 training seeds")
	require.Equal(t, 2+3, v[0].heldOut.Sessions, "the training scenarios under seed 3, the held-out one under seeds 1-3")
	report, err := os.ReadFile(filepath.Join(dir, ReportDir, ReportBase+".md"))
	require.NoError(t, err)
	require.Contains(t, string(report), "| abr-capacity-drop (held out) |")
}

// A raced tune scores every candidate on the first training seed, and
// confirms on the others the write-up's values and each generation's best
// that beats the best confirmed there: its winner is confirmed, its
// training score the validation's to the bit, at fewer sessions than
// running every candidate on every training seed.
func TestRacedTuneConfirmsTheChallengers(t *testing.T) {
	dir := t.TempDir()
	s := testSettings()
	s.Seeds, s.ValidationSeeds, s.Screen = []uint64{1, 2, 3}, []uint64{4}, 1
	require.NoError(t, Ask(dir, s))
	var names []string
	for len(names) < 30 {
		st, err := ReadStatus(dir)
		require.NoError(t, err)
		if st.Pending == "" {
			break
		}
		g, err := grid.Load(st.Grid)
		require.NoError(t, err)
		name := st.Pending[3:]
		switch name {
		case generation:
			require.Equal(t, []uint64{1}, g.Seeds, "%s runs the screening seed only", st.Pending)
		case confirmation:
			require.Equal(t, []uint64{2, 3}, g.Seeds, "%s runs the other training seeds", st.Pending)
		}
		names = append(names, name)
		fakeRun(t, dir, 1, 2) // in two shards, as a cluster runs a step
		fakeRun(t, dir, 2, 2)
		_, err = Tell(dir)
		require.NoError(t, err)
	}
	require.Equal(t, []string{generation, confirmation}, names[:2], "the write-up's values are confirmed after the first generation")
	require.Equal(t, validation, names[len(names)-1])

	steps, err := loadSteps(dir)
	require.NoError(t, err)
	h, err := replay(s, steps)
	require.NoError(t, err)
	defer h.srch.close()
	require.Len(t, h.generations, 6)
	require.Len(t, h.confirmations, len(names)-7)
	require.True(t, h.evals[0].Confirmed, "the write-up's values")
	best := h.evals[h.best]
	require.True(t, best.Confirmed)
	require.Equal(t, 6, best.Training.Sessions, "2 scenarios x 3 training seeds")
	require.Less(t, best.Training.Score, h.evals[0].Training.Score-50, "best %s", best.Point.ID)
	for _, e := range h.evals {
		require.False(t, e.Confirmed && e.Training.Score < best.Training.Score, "%s is confirmed and better than the winner", e.Point.ID)
	}
	require.Equal(t, best.Training.Score, h.validated()[0].training.Score, "the confirmed score and the validation's, on the same sessions")
	require.Equal(t, 2*len(h.evals)+4*h.confirmed(), h.searchSessions(), "2 screening sessions a candidate, 4 more a confirmation")
	require.Less(t, h.searchSessions(), 6*len(h.evals)/2)

	// The rule: a generation's best on the screening seed is confirmed
	// when it beats there every candidate confirmed before it.
	for g := 1; g <= len(h.generations); g++ {
		c, floor := -1, math.Inf(1)
		for i, e := range h.evals {
			if e.Generation == g && !e.WriteUp && (c < 0 || e.Screening.Score < h.evals[c].Screening.Score) {
				c = i
			}
			if e.Confirmed && (e.Generation < g || e.WriteUp) {
				floor = math.Min(floor, e.Screening.Score)
			}
		}
		require.Equal(t, h.evals[c].Screening.Score < floor, h.evals[c].Confirmed, "generation %d's best %s", g, h.evals[c].Point.ID)
	}
	report, err := os.ReadFile(filepath.Join(dir, ReportDir, ReportBase+".md"))
	require.NoError(t, err)
	require.Contains(t, string(report), "Candidates were raced: each ran first under seed 1 only, and the search ranked them by that score; a generation's best on it, when it beat the best confirmed candidate there, was confirmed under seeds 2, 3")
}

// A raced tune's steps come in their order: a generation where a
// confirmation is due is refused, and so is a confirmation of other
// candidates than those due.
func TestRacedTuneRefusesStepsOutOfOrder(t *testing.T) {
	s := testSettings()
	s.Seeds, s.ValidationSeeds, s.Screen = []uint64{1, 2, 3}, []uint64{4}, 1
	dir := t.TempDir()
	require.NoError(t, Ask(dir, s))
	fakeRun(t, dir, 1, 1)
	st, err := Tell(dir)
	require.NoError(t, err)
	require.Equal(t, "02-confirmation", st.Pending)

	step := filepath.Join(dir, PendingDir, "step")
	require.NoError(t, os.WriteFile(step, []byte("02-generation\n"), 0o644))
	fakeRun(t, dir, 1, 1)
	_, err = Tell(dir)
	require.ErrorContains(t, err, "a generation where the confirmation of generation 1's candidates is due")

	require.NoError(t, os.WriteFile(step, []byte("02-confirmation\n"), 0o644))
	require.NoError(t, os.RemoveAll(filepath.Join(dir, PendingDir, PartsDir)))
	g, err := grid.Load(st.Grid)
	require.NoError(t, err)
	g.Candidates[len(g.Candidates)-1].Hold = 777 * time.Millisecond
	require.NoError(t, os.WriteFile(st.Grid, grid.Format(g), 0o644))
	fakeRun(t, dir, 1, 1)
	_, err = Tell(dir)
	require.ErrorContains(t, err, "h777ms")
}
