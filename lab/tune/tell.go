package tune

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nuvirahub/latencylab/lab/sweep"
	"github.com/nuvirahub/latencylab/lab/sweep/grid"
)

// Eval is one candidate of the search, scored on the training sessions.
type Eval struct {
	// Generation counts from 1; the write-up's values run in the first.
	Generation int
	WriteUp    bool
	Point      grid.Point
	// Screening is the candidate's score on the seeds every candidate runs
	// under, the one the search ranks by: the training seeds' first when
	// racing (Settings.Screen), else all of them, and then the same as
	// Training.
	Screening Figures
	// Training is its score on every training session, known once
	// Confirmed: at once without racing, else after its confirmation.
	Training  Figures
	Confirmed bool
	// Sessions is how many sessions the search had run when this
	// candidate's training score was known (its screening score while it
	// is not confirmed): every session before it in its step's order, and
	// its own (the sessions a one-at-a-time run would have spent).
	Sessions int
	// Row holds its sessions: the screening ones, and the confirmation's
	// after them in the training sessions' order.
	Row sweep.Row
}

// history is a tune replayed from its steps: every candidate scored, and
// the search ready to propose the next generation.
type history struct {
	s             Settings
	generations   []step
	confirmations []step
	validation    *step
	ref           sweep.Row // the write-up's row, on every training session run so far
	evals         []Eval
	best          int   // into evals: the confirmed candidate with the best training score; -1 before any
	awaiting      []int // into evals: the candidates the next step must confirm
	converged     bool
	srch          *search
}

// replay rebuilds the search from the settings' seed and feeds it every
// generation's scores, checking each step ran exactly the candidates the
// search proposes, and each confirmation exactly the ones due. Close the
// history's search when done.
func replay(s Settings, steps []step) (*history, error) {
	h := &history{s: s, best: -1, srch: newSearch(start(s.Params), s.population(), s.Step, s.Seed)}
	spent := 0
	for i, st := range steps {
		var err error
		switch {
		case st.Name == validation && i != len(steps)-1:
			err = fmt.Errorf("%s: a step after the validation", steps[i+1].Dir)
		case st.Name == validation:
			h.validation = &steps[i]
		case st.Name == confirmation && len(h.awaiting) == 0:
			err = fmt.Errorf("%s: a confirmation where none is due (it follows a generation, when the tune races its candidates)", st.Dir)
		case st.Name == confirmation:
			err = h.confirm(st, &spent)
		case st.Name == generation && len(h.awaiting) > 0:
			err = fmt.Errorf("%s: a generation where the confirmation of generation %d's candidates is due", st.Dir, len(h.generations))
		case st.Name == generation:
			err = h.generation(st, &spent)
		default:
			err = fmt.Errorf("%s: not a step of a tune (expected NN-generation, NN-confirmation or NN-validation)", st.Dir)
		}
		if err != nil {
			return h, err
		}
	}
	h.converged = h.srch.done
	return h, nil
}

// generation checks a generation's step against the search's proposal,
// scores its candidates on the screening seeds, tells the search, and,
// when racing, picks what the next step confirms.
func (h *history) generation(st step, spent *int) error {
	s := h.s
	xs, err := h.srch.ask()
	if errors.Is(err, errConverged) {
		return fmt.Errorf("%s: the search had converged before this step", st.Dir)
	}
	if err != nil {
		return err
	}
	first := len(h.generations) == 0
	want, at := s.generationGrid(first, points(s.Params, xs))
	if err := sameCandidates(want, st.Grid); err != nil {
		return fmt.Errorf("%s: %w", st.Dir, err)
	}
	rows := st.Table.Rows
	if first {
		h.ref = rows[0]
	}
	screened := inSets(s.Scenarios, s.screenSeeds())
	per := len(s.Scenarios) * len(s.screenSeeds())
	begin := len(h.evals)
	for k, r := range rows {
		e := Eval{Generation: len(h.generations) + 1, WriteUp: first && k == 0, Point: r.Point,
			Screening: s.Weights.figures(r, h.ref, screened, s.Warmup), Sessions: *spent + (k+1)*per, Row: r}
		if !s.screening() {
			e.Training, e.Confirmed = e.Screening, true
		}
		h.evals = append(h.evals, e)
	}
	*spent += len(rows) * per
	scores := make([]float64, len(at))
	for j, k := range at {
		scores[j] = h.evals[begin+k].Screening.Score
	}
	if err := h.srch.tell(scores); err != nil {
		return err
	}
	h.generations = append(h.generations, st)
	h.pickBest()
	if s.screening() {
		h.awaiting = h.challengers(begin)
	}
	return nil
}

// challengers are the candidates of the generation starting at evals[begin]
// to confirm: the write-up's values, in the first, and the generation's
// best on the screening seeds when it beats there the best confirmed so
// far (or the write-up's values, in the first generation) and is not a
// point confirmed already.
func (h *history) challengers(begin int) []int {
	var out []int
	incumbent := h.best
	if begin == 0 {
		out = append(out, 0)
		incumbent = 0
	}
	c := -1
	for i := begin; i < len(h.evals); i++ {
		if c < 0 || h.evals[i].Screening.Score < h.evals[c].Screening.Score {
			c = i
		}
	}
	if c < 0 || math.IsInf(h.evals[c].Screening.Score, 1) || !(h.evals[c].Screening.Score < h.evals[incumbent].Screening.Score) {
		return out
	}
	for _, e := range h.evals[:begin] {
		if e.Confirmed && e.Point.ID == h.evals[c].Point.ID {
			return out
		}
	}
	return append(out, c)
}

// confirm checks a confirmation step ran the candidates due on the other
// training seeds, adds its sessions to their rows, and scores them on
// every training session.
func (h *history) confirm(st step, spent *int) error {
	s := h.s
	var pts []grid.Point
	for _, i := range h.awaiting {
		pts = append(pts, h.evals[i].Point)
	}
	if err := sameCandidates(s.confirmationGrid(pts), st.Grid); err != nil {
		return fmt.Errorf("%s: %w", st.Dir, err)
	}
	for k, i := range h.awaiting {
		e := &h.evals[i]
		e.Row.Runs = trainingOrder(s, append(slices.Clone(e.Row.Runs), st.Table.Rows[k].Runs...))
		if e.WriteUp {
			h.ref = e.Row
		}
	}
	training := inSets(s.Scenarios, s.Seeds)
	per := len(s.Scenarios) * len(s.confirmSeeds())
	for k, i := range h.awaiting {
		e := &h.evals[i]
		e.Training, e.Confirmed, e.Sessions = s.Weights.figures(e.Row, h.ref, training, s.Warmup), true, *spent+(k+1)*per
	}
	*spent += len(h.awaiting) * per
	h.awaiting = nil
	h.confirmations = append(h.confirmations, st)
	h.pickBest()
	return nil
}

// trainingOrder sorts runs as a grid of the training sessions orders them
// (scenario, then seed), so a confirmed candidate's score sums its
// sessions in the order the validation's does and gives the same bits.
func trainingOrder(s Settings, runs []sweep.RunResult) []sweep.RunResult {
	slices.SortStableFunc(runs, func(a, b sweep.RunResult) int {
		if c := slices.Index(s.Scenarios, a.Scenario) - slices.Index(s.Scenarios, b.Scenario); c != 0 {
			return c
		}
		return slices.Index(s.Seeds, a.Seed) - slices.Index(s.Seeds, b.Seed)
	})
	return runs
}

// pickBest sets best to the confirmed candidate with the lowest training
// score, the first of equals.
func (h *history) pickBest() {
	h.best = -1
	for i, e := range h.evals {
		if e.Confirmed && (h.best < 0 || e.Training.Score < h.evals[h.best].Training.Score) {
			h.best = i
		}
	}
}

// sameCandidates checks a step ran the grid the search proposes.
func sameCandidates(want, got grid.Grid) error {
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

// searchSessions counts the sessions of the search's generations and
// confirmations.
func (h *history) searchSessions() int {
	n := 0
	for _, g := range append(slices.Clone(h.generations), h.confirmations...) {
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
	note := told + " told: " + h.progress()
	switch {
	case h.validation != nil:
		if err := writeReport(filepath.Join(dir, ReportDir), h); err != nil {
			return st, err
		}
		return Status{Report: filepath.Join(dir, ReportDir), Note: note}, nil
	case len(h.awaiting) > 0:
		var pts []grid.Point
		for _, i := range h.awaiting {
			pts = append(pts, h.evals[i].Point)
		}
		if err := writePending(dir, stepName(n, confirmation), s.confirmationGrid(pts)); err != nil {
			return st, err
		}
	case len(h.generations) >= s.Generations || h.converged:
		best := h.evals[h.best]
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
		if err := writePending(dir, stepName(n, generation), g); err != nil {
			return st, err
		}
	}
	st, err = ReadStatus(dir)
	st.Note = note
	return st, err
}

// progress says the best so far: the best confirmed candidate's training
// score against the write-up's values', and, while a generation awaits
// its confirmation, its best on the screening seeds.
func (h *history) progress() string {
	var out []string
	if h.best >= 0 {
		b := h.evals[h.best]
		out = append(out, fmt.Sprintf("best so far %s, score %s (the write-up's values %s)", b.Point.ID, score(b.Training), score(h.evals[0].Training)))
	}
	if len(h.awaiting) > 0 {
		c := h.evals[h.awaiting[len(h.awaiting)-1]]
		out = append(out, fmt.Sprintf("to confirm: %s, %s on the screening seeds", c.Point.ID, score(c.Screening)))
	}
	return strings.Join(out, "; ")
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
func isWriteUp(p grid.Point) bool {
	w := WriteUp(Params)
	return (p.Threshold == 0 || p.Threshold == w.Threshold) && (p.Window == 0 || p.Window == w.Window) &&
		(p.Sustain == 0 || p.Sustain == w.Sustain) && (p.Close == 0 || p.Close == w.Close) &&
		(p.Hold == 0 || p.Hold == w.Hold) && (p.Decrease == 0 || p.Decrease == w.Decrease) &&
		(p.Increase == 0 || p.Increase == w.Increase) && (p.Min == 0 || p.Min == w.Min) && (p.Max == 0 || p.Max == w.Max)
}
