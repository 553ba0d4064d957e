package tune

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nuvirahub/latencylab/lab/sweep"
	"github.com/nuvirahub/latencylab/lab/sweep/grid"
)

// SettingsSchema names the JSON form of Settings (tune.json).
const SettingsSchema = "latencylab.tune/v1"

// The state folder's files.
const (
	SettingsFile = "tune.json"
	PendingDir   = "pending"
	StepsDir     = "steps"
	ReportDir    = "report"
	GridFile     = "grid.yaml"
	PartsDir     = "parts"
)

// Settings are a tune: what it searches, on which sessions, how it
// scores, and how long it searches.
type Settings struct {
	Schema string  `json:"schema"`
	Params []Param `json:"params"`
	// Scenarios and Seeds are the training sessions: every candidate runs
	// each scenario under each seed.
	Scenarios []string `json:"scenarios"`
	Seeds     []uint64 `json:"seeds"`
	// Screen, when above 0 and below the training seeds' count, races the
	// candidates: each is scored first on the first Screen training seeds
	// only, and the search ranks them by that; a generation's best there,
	// when it beats the best confirmed candidate on the same seeds, is
	// confirmed on the other training seeds (the write-up's values are
	// confirmed with the first generation). The winner is the confirmed
	// candidate with the best training score. Over the default grid's 72
	// points (exact) the score on seed 1 ranks them nearly as the score on
	// seeds 2 and 3 does (Spearman's rank correlation 0.91), at a third of
	// the sessions a candidate.
	Screen int `json:"screen,omitempty"`
	// ValidationSeeds and HeldOut are kept from the search: the
	// validation runs the winner, the write-up's values and the grid's
	// best point on them (every scenario under the validation seeds, and
	// the held-out scenarios under every seed).
	ValidationSeeds []uint64 `json:"validation_seeds"`
	HeldOut         []string `json:"held_out,omitempty"`
	// Warmup is left out of every measurement, as in the sweep; Duration,
	// when set, cuts every scenario to it (quick tunes, tests).
	Warmup   time.Duration `json:"warmup_ns"`
	Duration time.Duration `json:"duration_ns,omitempty"`
	Weights  Weights       `json:"weights"`
	// Population is the candidates per generation (0: CMA-ES's default,
	// 4 + 3 ln n for n parameters); Generations how many the search runs
	// at most; Step the optimiser's initial step, as a share of each
	// parameter's range (on its scale); Seed its random source's.
	Population  int     `json:"population"`
	Generations int     `json:"generations"`
	Step        float64 `json:"step"`
	Seed        uint64  `json:"seed"`
	// Exact runs every session exact (lab/exact), so that a candidate's
	// score is a function of the candidate; the steps' parts say how
	// they ran, and Merge refuses a step that mixes the two.
	Exact bool `json:"exact"`
	// Grid is the sweep grid the tune is measured against, when given.
	Grid *GridBest `json:"grid,omitempty"`
}

// GridBest is the best point of a sweep grid under the tune's objective,
// scored on the grid's own sessions.
type GridBest struct {
	// Parts are the part files it was read from.
	Parts []string   `json:"parts"`
	Point grid.Point `json:"point"`
	// Figures are its figures over every session of the grid.
	Figures Figures `json:"figures"`
	// Points and Sessions count the grid.
	Points   int `json:"points"`
	Sessions int `json:"sessions"`
	// Scenarios and Seeds are the grid's.
	Scenarios []string `json:"scenarios"`
	Seeds     []uint64 `json:"seeds"`
	// Screen, when above 0 and below the training seeds' count, races the
	// candidates: each is scored first on the first Screen training seeds
	// only, and the search ranks them by that; a generation's best there,
	// when it beats the best confirmed candidate on the same seeds, is
	// confirmed on the other training seeds (the write-up's values are
	// confirmed with the first generation). The winner is the confirmed
	// candidate with the best training score. Over the default grid's 72
	// points (exact) the score on seed 1 ranks them nearly as the score on
	// seeds 2 and 3 does (Spearman's rank correlation 0.91), at a third of
	// the sessions a candidate.
	Screen int `json:"screen,omitempty"`
}

// SameSessions says whether the grid ran exactly the tune's training
// sessions, so that its best score and the tune's compare directly.
func (s Settings) SameSessions() bool {
	return s.Grid != nil && slices.Equal(s.Grid.Scenarios, s.Scenarios) && slices.Equal(s.Grid.Seeds, s.Seeds)
}

// Validate checks the settings before any session runs.
func (s Settings) Validate() error {
	var errs []error
	if len(s.Params) == 0 {
		errs = append(errs, errors.New("no parameters to search"))
	}
	if len(s.Scenarios) == 0 {
		errs = append(errs, errors.New("no training scenarios"))
	}
	if len(s.Seeds) == 0 {
		errs = append(errs, errors.New("no training seeds: the search needs at least one"))
	}
	for _, v := range s.ValidationSeeds {
		if slices.Contains(s.Seeds, v) {
			errs = append(errs, fmt.Errorf("seed %d is both a training and a validation seed: a held-out seed must not be searched on", v))
		}
	}
	for _, h := range s.HeldOut {
		if slices.Contains(s.Scenarios, h) {
			errs = append(errs, fmt.Errorf("scenario %s is both trained on and held out", h))
		}
	}
	if len(s.ValidationSeeds) == 0 && len(s.HeldOut) == 0 {
		errs = append(errs, errors.New("nothing held out: give validation seeds or held-out scenarios, or the validation would only repeat the training"))
	}
	if s.Screen < 0 {
		errs = append(errs, fmt.Errorf("screen %d: expected the count of training seeds a candidate is first scored on, or 0 to score each on every training seed", s.Screen))
	}
	if s.Generations < 1 {
		errs = append(errs, fmt.Errorf("generations %d: expected 1 or more", s.Generations))
	}
	if s.Population < 0 || s.Population == 1 {
		errs = append(errs, fmt.Errorf("population %d: expected 2 or more, or 0 for CMA-ES's default", s.Population))
	}
	if !(s.Step > 0 && s.Step <= 1) {
		errs = append(errs, fmt.Errorf("step %g: expected a share of the range above 0 and at most 1", s.Step))
	}
	return errors.Join(errs...)
}

// population is the generation's size the search uses.
func (s Settings) population() int {
	if s.Population > 0 {
		return s.Population
	}
	return 4 + int(3*math.Log(float64(len(s.Params))))
}

// screening says whether candidates are raced: scored first on some of
// the training seeds, the promising ones confirmed on the rest.
func (s Settings) screening() bool { return s.Screen > 0 && s.Screen < len(s.Seeds) }

// screenSeeds are the seeds every candidate runs under: the first Screen
// training seeds when racing, else all of them.
func (s Settings) screenSeeds() []uint64 {
	if s.screening() {
		return s.Seeds[:s.Screen]
	}
	return s.Seeds
}

// confirmSeeds are the training seeds a candidate runs under only when
// confirmed; none without racing.
func (s Settings) confirmSeeds() []uint64 {
	if s.screening() {
		return s.Seeds[s.Screen:]
	}
	return nil
}

// step is one step of a tune read back: its name, grid and merged table.
type step struct {
	Name  string
	Dir   string
	Grid  grid.Grid
	Table *sweep.Table
}

// The steps' names: a generation's candidates on the screening seeds,
// the confirmation of the promising ones on the other training seeds, and
// the validation, the last step.
const (
	generation   = "generation"
	confirmation = "confirmation"
	validation   = "validation"
)

// loadSettings reads tune.json.
func loadSettings(dir string) (Settings, error) {
	var s Settings
	data, err := os.ReadFile(filepath.Join(dir, SettingsFile))
	if errors.Is(err, os.ErrNotExist) {
		return s, fmt.Errorf("%s: no tune here (no %s): start one with lab tune -ask -state %s", dir, SettingsFile, dir)
	}
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("%s: %w", filepath.Join(dir, SettingsFile), err)
	}
	if s.Schema != SettingsSchema {
		return s, fmt.Errorf("%s: schema %q: expected %q, written by lab tune", filepath.Join(dir, SettingsFile), s.Schema, SettingsSchema)
	}
	return s, s.Validate()
}

// loadStep reads a step folder: its grid and its parts, merged.
func loadStep(dir string) (step, error) {
	st := step{Name: strings.TrimLeft(filepath.Base(dir), "0123456789-"), Dir: dir}
	g, err := grid.Load(filepath.Join(dir, GridFile))
	if err != nil {
		return st, err
	}
	st.Grid = g
	files, err := filepath.Glob(filepath.Join(dir, PartsDir, "*.json"))
	if err != nil {
		return st, err
	}
	if len(files) == 0 {
		return st, fmt.Errorf("%s: no part files in %s: run its grid first (lab sweep -grid %s -out %s, sharded or not)",
			dir, filepath.Join(dir, PartsDir), filepath.Join(dir, GridFile), filepath.Join(dir, PartsDir))
	}
	slices.Sort(files)
	var parts []*sweep.Part
	for _, f := range files {
		p, err := sweep.ReadPart(f)
		if err != nil {
			return st, err
		}
		want, _ := json.Marshal(g)
		if got, _ := json.Marshal(p.Grid); string(got) != string(want) {
			return st, fmt.Errorf("%s: the part ran another grid than %s", f, filepath.Join(dir, GridFile))
		}
		parts = append(parts, p)
	}
	t, err := sweep.Merge(parts)
	if err != nil {
		return st, fmt.Errorf("%s: %w", dir, err)
	}
	st.Table = t
	return st, nil
}

// loadSteps reads the steps done, in order.
func loadSteps(dir string) ([]step, error) {
	entries, err := os.ReadDir(filepath.Join(dir, StepsDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []step
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		st, err := loadStep(filepath.Join(dir, StepsDir, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// writePending writes the next step's grid.
func writePending(dir, name string, g grid.Grid) error {
	if err := g.Validate(); err != nil {
		return fmt.Errorf("tune: the %s step's grid: %w", name, err)
	}
	p := filepath.Join(dir, PendingDir)
	if err := os.MkdirAll(filepath.Join(p, PartsDir), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(p, "step"), []byte(name+"\n"), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(p, GridFile), grid.Format(g), 0o644)
}

// unique lists the points once each, in their first order, and for
// every point given its index in that list: rounding can make two of the
// optimiser's candidates the same point, which runs once.
func unique(pts []grid.Point) (list []grid.Point, at []int) {
	ids := map[string]int{}
	for _, p := range pts {
		p.Index, p.ID = 0, ""
		g := grid.Grid{Candidates: []grid.Point{p}}
		id := g.Points()[0].ID
		i, ok := ids[id]
		if !ok {
			i = len(list)
			ids[id] = i
			list = append(list, p)
		}
		at = append(at, i)
	}
	return list, at
}

// generationGrid is a generation's grid: the training sessions of its
// points (the first generation's led by the write-up's values, the
// reference every score reads bitrate against).
func (s Settings) generationGrid(first bool, pts []grid.Point) (grid.Grid, []int) {
	if first {
		pts = append([]grid.Point{WriteUp(s.Params)}, pts...)
	}
	list, at := unique(pts)
	if first {
		at = at[1:]
	}
	return grid.Grid{Candidates: list, Scenarios: s.Scenarios, Seeds: s.screenSeeds(), Warmup: s.Warmup, Duration: s.Duration}, at
}

// confirmationGrid runs the points, screened already, on the training
// seeds they have not run under.
func (s Settings) confirmationGrid(pts []grid.Point) grid.Grid {
	return grid.Grid{Candidates: pts, Scenarios: s.Scenarios, Seeds: s.confirmSeeds(), Warmup: s.Warmup, Duration: s.Duration}
}

// validationGrid runs the winner, the write-up's values and the grid's
// best point on every session: the training ones again (exact, they
// repeat) and the held-out ones.
func (s Settings) validationGrid(best grid.Point) grid.Grid {
	pts := []grid.Point{best, WriteUp(s.Params)}
	if s.Grid != nil {
		pts = append(pts, s.Grid.Point)
	}
	list, _ := unique(pts)
	seeds := append(slices.Clone(s.Seeds), s.ValidationSeeds...)
	return grid.Grid{Candidates: list, Scenarios: append(slices.Clone(s.Scenarios), s.HeldOut...), Seeds: seeds, Warmup: s.Warmup, Duration: s.Duration}
}

// Ask starts a tune in dir: it writes the settings and the first
// generation's grid into pending. dir must not hold a tune already.
func Ask(dir string, s Settings) error {
	s.Schema = SettingsSchema
	if err := s.Validate(); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, SettingsFile)); err == nil {
		return fmt.Errorf("%s already holds a tune (%s): go on with lab tune -tell, or start in another folder", dir, SettingsFile)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, SettingsFile), append(data, '\n'), 0o644); err != nil {
		return err
	}
	srch := newSearch(start(s.Params), s.population(), s.Step, s.Seed)
	defer srch.close()
	xs, err := srch.ask()
	if err != nil {
		return err
	}
	g, _ := s.generationGrid(true, points(s.Params, xs))
	return writePending(dir, stepName(1, generation), g)
}

// points maps the optimiser's coordinates to candidates.
func points(ps []Param, xs [][]float64) []grid.Point {
	out := make([]grid.Point, len(xs))
	for i, x := range xs {
		out[i] = point(ps, x)
	}
	return out
}

func stepName(n int, what string) string { return fmt.Sprintf("%02d-%s", n, what) }

// Status is where a tune stands.
type Status struct {
	// Pending names the step whose sessions are due ("03-generation"),
	// empty when the tune is done.
	Pending string
	// Grid is the pending step's grid file, for lab sweep.
	Grid string
	// Report is the report's folder once done.
	Report string
	// Note says what the last Tell learnt: the best so far.
	Note string
}

// String is the status in one line.
func (s Status) String() string {
	if s.Pending == "" {
		return "done: report in " + s.Report
	}
	return fmt.Sprintf("pending: step %s, its grid %s", s.Pending, s.Grid)
}

// errBetweenSteps: a tell moved its step among those done and stopped
// before writing the next; a tell writes it.
var errBetweenSteps = errors.New("no pending step and no report: the tune stopped between two steps")

// ReadStatus reads where the tune in dir stands.
func ReadStatus(dir string) (Status, error) {
	if _, err := loadSettings(dir); err != nil {
		return Status{}, err
	}
	name, err := os.ReadFile(filepath.Join(dir, PendingDir, "step"))
	if errors.Is(err, os.ErrNotExist) {
		if _, err := os.Stat(filepath.Join(dir, ReportDir)); err != nil {
			return Status{}, fmt.Errorf("%s: %w: run lab tune -tell again to write it", dir, errBetweenSteps)
		}
		return Status{Report: filepath.Join(dir, ReportDir)}, nil
	}
	if err != nil {
		return Status{}, err
	}
	return Status{Pending: strings.TrimSpace(string(name)), Grid: filepath.Join(dir, PendingDir, GridFile)}, nil
}
