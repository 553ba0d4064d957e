package tune

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/nuvirahub/latencylab/lab/sweep"
)

// Eval is one candidate of the search, scored on the training sessions.
type Eval struct {
	// Generation counts from 1; the write-up's values run in the first.
	Generation int
	WriteUp    bool
	Point      sweep.Point
	Training   Figures
	// Sessions is how many sessions the search had run when this
	// candidate's score was known: every session before it in its
	// generation's order, and its own (the sessions a one-at-a-time run
	// would have spent).
	Sessions int
	Row      sweep.Row
}

// history is a tune replayed from its steps: every candidate scored, and
// the search ready to propose the next generation.
type history struct {
	s           Settings
	generations []step
	validation  *step
	ref         sweep.Row // the write-up's training row
	evals       []Eval
	best        int // index into evals
	converged   bool
	srch        *search
}

// replay rebuilds the search from the settings' seed and feeds it every
// generation's scores, checking each step ran exactly the candidates the
// search proposes. Close the history's search when done.
func replay(s Settings, steps []step) (*history, error) {
	h := &history{s: s, best: -1, srch: newSearch(start(s.Params), s.population(), s.Step, s.Seed)}
	training := inSets(s.Scenarios, s.Seeds)
	spent := 0
	for i, st := range steps {
		if st.Name == validation {
			if i != len(steps)-1 {
				return h, fmt.Errorf("%s: a step after the validation", steps[i+1].Dir)
			}
			h.validation = &steps[i]
			break
		}
		if st.Name != "generation" {
			return h, fmt.Errorf("%s: not a step of a tune (expected NN-generation or NN-validation)", st.Dir)
		}
		xs, err := h.srch.ask()
		if errors.Is(err, errConverged) {
			return h, fmt.Errorf("%s: the search had converged before this step", st.Dir)
		}
		if err != nil {
			return h, err
		}
		first := len(h.generations) == 0
		want, at := s.generationGrid(first, points(s.Params, xs))
		if err := sameCandidates(want, st.Grid); err != nil {
			return h, fmt.Errorf("%s: %w", st.Dir, err)
		}
		rows := st.Table.Rows
		if first {
			h.ref = rows[0]
		}
		per := len(s.Scenarios) * len(s.Seeds)
		figs := make([]Figures, len(rows))
		for k, r := range rows {
			figs[k] = s.Weights.figures(r, h.ref, training, s.Warmup)
			h.evals = append(h.evals, Eval{Generation: len(h.generations) + 1, WriteUp: first && k == 0, Point: r.Point,
				Training: figs[k], Sessions: spent + (k+1)*per, Row: r})
		}
		spent += len(rows) * per
		scores := make([]float64, len(at))
		for j, k := range at {
			scores[j] = figs[k].Score
		}
		if err := h.srch.tell(scores); err != nil {
			return h, err
		}
		h.generations = append(h.generations, st)
	}
	for i, e := range h.evals {
		if h.best < 0 || e.Training.Score < h.evals[h.best].Training.Score {
			h.best = i
		}
	}
	h.converged = h.srch.done
	return h, nil
}

// sameCandidates checks a step ran the grid the search proposes.
func sameCandidates(want, got sweep.Grid) error {
	wp, gp := want.Points(), got.Points()
	if len(wp) != len(gp) {
		return fmt.Errorf("the step ran %d candidates where the search proposes %d: its grid was not written by this tune's settings", len(gp), len(wp))
	}
	for i := range wp {
		if wp[i].ID != gp[i].ID {
			return fmt.Errorf("candidate %d is %s where the search proposes %s: a step from another tune, or the optimiser's arithmetic differs on this machine (replay the tune where it started)", i+1, gp[i].ID, wp[i].ID)
		}
	}
	if !equalStrings(want.Scenarios, got.Scenarios) || fmt.Sprint(want.Seeds) != fmt.Sprint(got.Seeds) || want.Warmup != got.Warmup || want.Duration != got.Duration {
		return errors.New("the step's scenarios, seeds, warm-up or duration differ from the tune's settings")
	}
	return nil
}

func equalStrings(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") }

// searchSessions counts the sessions of the search's generations.
func (h *history) searchSessions() int {
	n := 0
	for _, g := range h.generations {
		n += g.Table.Sessions()
	}
	return n
}

// Tell merges the pending step's parts, moves the step among those done,
// and writes the next step: another generation, the validation once the
// search has run its generations (or converged), or, after the
// validation, the report. It returns the tune's status after.
func Tell(dir string) (Status, error) {
	s, err := loadSettings(dir)
	if err != nil {
		return Status{}, err
	}
	st, err := ReadStatus(dir)
	between := errors.Is(err, errBetweenSteps)
	if err != nil && !between {
		return Status{}, err
	}
	if st.Pending == "" && !between {
		return st, fmt.Errorf("%s: the tune is done: its report is in %s", dir, st.Report)
	}
	done, err := loadSteps(dir)
	if err != nil {
		return st, err
	}
	steps := done
	if !between {
		pending, err := loadStep(filepath.Join(dir, PendingDir))
		if err != nil {
			return st, err
		}
		pending.Name = strings.TrimLeft(st.Pending, "0123456789-")
		steps = append(steps, pending)
	}
	h, err := replay(s, steps)
	if h != nil {
		defer h.srch.close()
	}
	if err != nil {
		return st, err
	}
	if !between {
		// The pending step checked out: it joins the steps done.
		if err := os.MkdirAll(filepath.Join(dir, StepsDir), 0o755); err != nil {
			return st, err
		}
		if err := os.Rename(filepath.Join(dir, PendingDir), filepath.Join(dir, StepsDir, st.Pending)); err != nil {
			return st, err
		}
	}
	n := len(steps) + 1
	told := st.Pending
	if between {
		told = filepath.Base(steps[len(steps)-1].Dir)
	}
	best := h.evals[h.best]
	note := fmt.Sprintf("%s told: best so far %s, score %s (the write-up's values %s)", told, best.Point.ID, score(best.Training), score(h.evals[0].Training))
	switch {
	case h.validation != nil:
		if err := writeReport(filepath.Join(dir, ReportDir), h); err != nil {
			return st, err
		}
		return Status{Report: filepath.Join(dir, ReportDir), Note: note}, nil
	case len(h.generations) >= s.Generations || h.converged:
		if math.IsInf(best.Training.Score, 1) {
			return st, fmt.Errorf("tune: no candidate has a score: %s", best.Training.Missing)
		}
		if err := writePending(dir, stepName(n, validation), s.validationGrid(best.Point)); err != nil {
			return st, err
		}
	default:
		xs, err := h.srch.ask()
		if err != nil {
			return st, err
		}
		g, _ := s.generationGrid(false, points(s.Params, xs))
		if err := writePending(dir, stepName(n, "generation"), g); err != nil {
			return st, err
		}
	}
	st, err = ReadStatus(dir)
	st.Note = note
	return st, err
}

// GridBestOf scores every point of a sweep (its part files) with the
// weights, each on the grid's own sessions against the grid's point at
// the write-up's values, and returns the best. The grid must hold that
// point: the objective reads bitrate against it.
func GridBestOf(files []string, w Weights) (*GridBest, error) {
	var parts []*sweep.Part
	for _, f := range files {
		p, err := sweep.ReadPart(f)
		if err != nil {
			return nil, err
		}
		parts = append(parts, p)
	}
	t, err := sweep.Merge(parts)
	if err != nil {
		return nil, err
	}
	ref := -1
	for i, r := range t.Rows {
		if isWriteUp(r.Point) {
			ref = i
		}
	}
	if ref < 0 {
		return nil, errors.New("tune: the grid has no point at the write-up's values (threshold 60ms, decrease 20%, increase 15%, hold 1.5s, and the defaults of the rest), which the objective reads bitrate against")
	}
	all := func(key) bool { return true }
	gb := &GridBest{Parts: files, Points: len(t.Rows), Sessions: t.Sessions(), Scenarios: t.Grid.Scenarios, Seeds: t.Grid.Seeds}
	best := math.Inf(1)
	for _, r := range t.Rows {
		f := w.figures(r, t.Rows[ref], all, t.Grid.Warmup)
		if f.Score < best || gb.Point.ID == "" {
			best, gb.Point, gb.Figures = f.Score, r.Point, f
		}
	}
	gb.Point.Index = 0
	return gb, nil
}

// isWriteUp says whether every parameter the point sets is at the
// write-up's value.
func isWriteUp(p sweep.Point) bool {
	w := WriteUp(Params)
	return (p.Threshold == 0 || p.Threshold == w.Threshold) && (p.Window == 0 || p.Window == w.Window) &&
		(p.Sustain == 0 || p.Sustain == w.Sustain) && (p.Close == 0 || p.Close == w.Close) &&
		(p.Hold == 0 || p.Hold == w.Hold) && (p.Decrease == 0 || p.Decrease == w.Decrease) &&
		(p.Increase == 0 || p.Increase == w.Increase) && (p.Min == 0 || p.Min == w.Min) && (p.Max == 0 || p.Max == w.Max)
}
