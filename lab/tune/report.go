package tune

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/nuvirahub/latencylab/lab/sweep"
	"github.com/nuvirahub/latencylab/lab/sweep/grid"
	"github.com/nuvirahub/latencylab/reports/plots"
	"github.com/nuvirahub/latencylab/reports/render"
	"github.com/nuvirahub/latencylab/scenarios"
)

// The report's files, in the state folder's report folder.
const (
	ReportBase      = "tune"
	ConvergencePlot = "tune-convergence.png"
	FrontPlot       = "tune-front.png"
	SnippetFile     = "recommended.yaml"
)

// setting is one row of the validation: a setting and its figures on
// the training and the held-out sessions.
type setting struct {
	label             string
	point             grid.Point
	training, heldOut Figures
	row               sweep.Row
}

// validated reads the validation step: for the winner, the write-up's
// values and the grid's best point, their figures on the training
// sessions and on the rest (the held-out ones), each against the
// write-up's values on the same session.
func (h *history) validated() []setting {
	s, t := h.s, h.validation.Table
	byID := map[string]sweep.Row{}
	for _, r := range t.Rows {
		byID[r.Point.ID] = r
	}
	ref := byID[named(WriteUp(s.Params)).ID]
	training := inSets(s.Scenarios, s.Seeds)
	heldOut := func(k key) bool { return !training(k) }
	var out []setting
	add := func(label string, p grid.Point) {
		p = named(p)
		r := byID[p.ID]
		out = append(out, setting{label: label, point: p, row: r,
			training: s.Weights.figures(r, ref, training, s.Warmup), heldOut: s.Weights.figures(r, ref, heldOut, s.Warmup)})
	}
	add("tuned (the search's best)", h.evals[h.best].Point)
	add("the write-up's values (N10)", WriteUp(s.Params))
	if s.Grid != nil {
		add("the grid's best point", s.Grid.Point)
	}
	return out
}

// reached is the candidate whose training score was first known to be at
// most the target, and the sessions spent then; -1 when none.
func (h *history) reached(target float64) (int, int) {
	at := -1
	for i, e := range h.evals {
		if e.Confirmed && e.Training.Score <= target && (at < 0 || e.Sessions < h.evals[at].Sessions) {
			at = i
		}
	}
	if at < 0 {
		return -1, 0
	}
	return at, h.evals[at].Sessions
}

// named is the point with its ID, as a grid of it names it.
func named(p grid.Point) grid.Point { return grid.Grid{Candidates: []grid.Point{p}}.Points()[0] }

func ms(v float64) string { return fixed(v, 1) }

func pct(v float64) string { return fixed(v, 1) + "%" }

// fixed writes v with the decimals given, without a minus sign on a
// figure that rounds to zero.
func fixed(v float64, decimals int) string {
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	if strings.Trim(s, "-0.") == "" {
		return strings.TrimPrefix(s, "-")
	}
	return s
}

func perMin(v float64) string { return fixed(v, 2) }

// score writes a score, or why there is none.
func score(f Figures) string {
	if math.IsInf(f.Score, 1) {
		return "n/a (" + f.Missing + ")"
	}
	return ms(f.Score)
}

// doc is the tune's report.
func (h *history) doc() (*render.Doc, []byte, []byte, error) {
	s := h.s
	best := h.evals[h.best]
	vals := h.validated()
	var keys []string
	for _, p := range s.Params {
		keys = append(keys, p.Key)
	}
	intro := []string{
		fmt.Sprintf("CMA-ES (gonum's optimize.CmaEsChol) over %s, from the write-up's values (N10), %d candidates a generation, %d generation(s), seed %d. "+
			"Training sessions: %s under seeds %s. Held out: seeds %s%s.",
			strings.Join(keys, ", "), s.population(), len(h.generations), s.Seed,
			strings.Join(s.Scenarios, ", "), seedList(s.Seeds), orNone(seedList(s.ValidationSeeds)), heldOutPhrase(s.HeldOut)),
		"The objective: " + s.Weights.Describe() + fmt.Sprintf(". Measured after a warm-up of %s.", scenarios.FormatDuration(s.Warmup)),
		fmt.Sprintf("The search ran %d sessions (%d candidates, the write-up's values among them); the validation %d more.",
			h.searchSessions(), len(h.evals), h.validation.Table.Sessions()),
	}
	if s.screening() {
		intro = append(intro, fmt.Sprintf("Candidates were raced: each ran first under %s only, and the search ranked them by that score; "+
			"a generation's best on it, when it beat the best confirmed candidate there, was confirmed under %s "+
			"(the write-up's values with the first generation). %d of the %d candidates were confirmed; the winner is the confirmed candidate with the best training score.",
			seedsPhrase(s.screenSeeds()), seedsPhrase(s.confirmSeeds()), h.confirmed(), len(h.evals)))
	}
	d := &render.Doc{Title: "ABR tune: " + strings.Join(s.Scenarios, ", "), Intro: intro}

	snippet := Snippet(best.Point)
	d.Sections = append(d.Sections, render.Section{
		Heading: "Recommended settings",
		Paragraphs: []string{
			fmt.Sprintf("The best candidate on the training sessions, %s (generation %d), as a scenario's controller (also in %s):", best.Point.ID, best.Generation, SnippetFile),
			"`" + snippet + "`",
		},
	})

	valTab := render.Table{
		Caption: "Each setting on the training sessions and on the held-out ones (each against the write-up's values on the same session): score, latency p95, bitrate below the write-up's values, freezes per minute.",
		Header:  []string{"setting", "point", "training score", "held-out score", "held-out p95 (ms)", "held-out bitrate below", "held-out freezes/min"},
	}
	for _, v := range vals {
		valTab.Rows = append(valTab.Rows, []string{v.label, v.point.ID, score(v.training), score(v.heldOut), ms(v.heldOut.P95), pct(v.heldOut.Bitrate), perMin(v.heldOut.Freezes)})
	}
	d.Sections = append(d.Sections, render.Section{Heading: "Training and validation", Tables: []render.Table{valTab},
		Paragraphs: []string{"A tuned setting that wins on the training sessions but not on the held-out ones has learnt the training seeds' draws, not the ABR's trade-off."}})

	// Convergence, against the grid when there is one.
	var xs, ys []float64
	for _, e := range h.evals {
		if e.Confirmed {
			xs, ys = append(xs, float64(e.Sessions)), append(ys, e.Training.Score)
		}
	}
	levels := []plots.Level{{Label: "write-up's values", Y: h.evals[0].Training.Score}}
	var budget float64
	conv := render.Section{Heading: "Convergence"}
	if g := s.Grid; g != nil {
		budget = float64(g.Sessions) / 4
		levels = append(levels, plots.Level{Label: "grid's best point", Y: g.Figures.Score})
		conv.Paragraphs = append(conv.Paragraphs, h.speedPhrase())
	}
	// Without racing every candidate has a training score; racing, only
	// the confirmed ones, and every candidate its screening figures.
	each, caption, over := "each candidate", "Every candidate's training score at the sessions spent when it was known, the best so far, and the write-up's values", "training"
	if s.screening() {
		each, over = "each confirmed candidate", "screening"
		caption = "Every confirmed candidate's training score at the sessions spent when it was known (screening and confirmations counted), the best so far, and the write-up's values"
	}
	png, err := plots.Convergence("Training score by sessions spent", "sessions", "score (lower is better)", each, xs, ys, levels, budget)
	if err != nil {
		return nil, nil, nil, err
	}
	if s.Grid != nil {
		caption += "; the grid's best point and a quarter of the grid's sessions"
	}
	conv.Figures = []render.Figure{{Name: ConvergencePlot, Caption: caption + ".", PNG: png}}
	d.Sections = append(d.Sections, conv)

	// The front of latency against bitrate over every candidate.
	var pts []plots.Point
	for i, e := range h.evals {
		pts = append(pts, plots.Point{X: e.Screening.P95, Y: -e.Screening.Bitrate, Label: "#" + strconv.Itoa(i+1)})
	}
	front := plots.ParetoFront(pts, true, false)
	fpng, err := plots.Pareto("Latency p95 against bitrate, every candidate", "latency p95 (ms, lower is better)", "bitrate against the write-up's values (%, higher is better)", pts, front)
	if err != nil {
		return nil, nil, nil, err
	}
	var on []string
	for _, i := range front {
		on = append(on, fmt.Sprintf("#%d %s", i+1, h.evals[i].Point.ID))
	}
	d.Sections = append(d.Sections, render.Section{Heading: "Pareto front",
		Paragraphs: []string{"Candidates no other candidate beats on both latency p95 and bitrate (means over the " + over + " sessions): " + strings.Join(on, ", ") + ". The objective picks one point of it; other weights pick others."},
		Figures:    []render.Figure{{Name: FrontPlot, Caption: "Latency p95 against bitrate of every candidate (" + over + " sessions).", PNG: fpng}}})

	d.Sections = append(d.Sections, render.Section{Heading: "By scenario", Tables: []render.Table{h.scenarioTable(vals)}})
	d.Sections = append(d.Sections, render.Section{Heading: "Every candidate", Tables: []render.Table{h.candidateTable()}})
	return d, png, fpng, nil
}

// seedList writes seeds as "1, 2, 3".
func seedList(v []uint64) string {
	var out []string
	for _, x := range v {
		out = append(out, strconv.FormatUint(x, 10))
	}
	return strings.Join(out, ", ")
}

// seedsPhrase names seeds: "seed 1", "seeds 2, 3".
func seedsPhrase(v []uint64) string {
	if len(v) == 1 {
		return "seed " + seedList(v)
	}
	return "seeds " + seedList(v)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func heldOutPhrase(h []string) string {
	if len(h) == 0 {
		return ""
	}
	return "; scenarios " + strings.Join(h, ", ")
}

// speedPhrase compares the search with the grid: the sessions it took to
// reach the grid's best score.
func (h *history) speedPhrase() string {
	g := h.s.Grid
	i, at := h.reached(g.Figures.Score)
	lead := fmt.Sprintf("The grid (%d points, %d sessions) scores best at %s: %s on its own sessions. A quarter of its sessions is %d.",
		g.Points, g.Sessions, g.Point.ID, ms(g.Figures.Score), g.Sessions/4)
	if !h.s.SameSessions() {
		return lead + " The grid ran other sessions than the tune's training set, so the two scores do not compare directly; the validation runs both on the same sessions."
	}
	if i < 0 {
		return lead + fmt.Sprintf(" The search did not reach it in %d sessions (best %s).", h.searchSessions(), ms(h.evals[h.best].Training.Score))
	}
	verdict := "within a quarter of the grid's sessions"
	if at > g.Sessions/4 {
		verdict = "but not within a quarter of the grid's sessions"
	}
	return lead + fmt.Sprintf(" The search reached it after %d sessions, with %s (%s), %s; its best after %d sessions is %s.",
		at, h.evals[i].Point.ID, ms(h.evals[i].Training.Score), verdict, h.searchSessions(), ms(h.evals[h.best].Training.Score))
}

// scenarioTable sets the winner beside the write-up's values scenario by
// scenario, over every seed of the validation.
func (h *history) scenarioTable(vals []setting) render.Table {
	s := h.s
	tab := render.Table{
		Caption: "Per scenario, over every seed of the validation (training and held-out): the tuned setting against the write-up's values.",
		Header:  []string{"scenario", "p95 tuned (ms)", "p95 write-up (ms)", "bitrate tuned vs write-up", "freezes/min tuned", "freezes/min write-up"},
	}
	ref := vals[1].row
	for _, sc := range append(slices.Clone(s.Scenarios), s.HeldOut...) {
		one := inSets([]string{sc}, nil)
		tuned := s.Weights.figures(vals[0].row, ref, one, s.Warmup)
		wu := s.Weights.figures(ref, ref, one, s.Warmup)
		name := sc
		if slices.Contains(s.HeldOut, sc) {
			name += " (held out)"
		}
		tab.Rows = append(tab.Rows, []string{name, ms(tuned.P95), ms(wu.P95), pct(-tuned.Bitrate), perMin(tuned.Freezes), perMin(wu.Freezes)})
	}
	return tab
}

// candidateTable lists every candidate in the order evaluated, and,
// when racing, its screening figures and the training score of those
// confirmed.
func (h *history) candidateTable() render.Table {
	tab := render.Table{
		Caption: "Every candidate in the order the search ran them, on the training sessions.",
		Header:  []string{"#", "generation", "point", "score", "p95 (ms)", "bitrate vs write-up", "freezes/min", "sessions spent"},
	}
	if h.s.screening() {
		tab.Caption = "Every candidate in the order the search ran them, on the screening sessions, and the training score of those confirmed (sessions spent: when its last score was known)."
		tab.Header = []string{"#", "generation", "point", "screening score", "p95 (ms)", "bitrate vs write-up", "freezes/min", "training score", "sessions spent"}
	}
	for i, e := range h.evals {
		id := e.Point.ID
		if e.WriteUp {
			id += " (write-up)"
		}
		row := []string{strconv.Itoa(i + 1), strconv.Itoa(e.Generation), id, score(e.Screening), ms(e.Screening.P95), pct(-e.Screening.Bitrate), perMin(e.Screening.Freezes)}
		if h.s.screening() {
			training := "not confirmed"
			if e.Confirmed {
				training = score(e.Training)
			}
			row = append(row, training)
		}
		tab.Rows = append(tab.Rows, append(row, strconv.Itoa(e.Sessions)))
	}
	return tab
}

// confirmed counts the candidates with a training score.
func (h *history) confirmed() int {
	n := 0
	for _, e := range h.evals {
		if e.Confirmed {
			n++
		}
	}
	return n
}

// writeReport writes the report, its plots and the snippet into dir.
func writeReport(dir string, h *history) error {
	d, _, _, err := h.doc()
	if err != nil {
		return err
	}
	if err := render.Write(dir, ReportBase, d); err != nil {
		return err
	}
	best := h.evals[h.best]
	snippet := fmt.Sprintf("# lab tune's recommendation: %s, training score %s (%s)\n%s\n", best.Point.ID, ms(best.Training.Score), h.s.Weights.Describe(), Snippet(best.Point))
	return os.WriteFile(filepath.Join(dir, SnippetFile), []byte(snippet), 0o644)
}
