package lab

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nuvirahub/latencylab/internal/docregion"
	"github.com/nuvirahub/latencylab/internal/needs"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/scenarios"
)

// The bounds' measurement (make bounds): go test ./lab -run
// '^TestLibrarySpread$' -args -spread 10 -spread-doc.
var (
	spreadRuns = flag.Int("spread", 0, "run every library scenario this many times at its seed and as many at seed+1000, and print each expectation's spread and the bounds the rule gives")
	spreadDoc  = flag.Bool("spread-doc", false, "with -spread: rewrite the bounds table of docs/testing.md")
	// A group's scenarios alone (make bounds BOUNDS_GROUP=rmcat): their rows
	// of the table are rewritten, every other row kept as it was measured.
	spreadGroup = flag.String("spread-group", "", "with -spread: only the scenarios of this group; with -spread-doc, only their rows of the table are rewritten")
)

// spreadSeedOffset is the other seed the library must pass with
// (TestLibraryAnotherSeed), so the bounds are set from both.
const spreadSeedOffset = 1000

// spread collects every run's checks, by scenario, in the library's order.
var spread struct {
	mu     sync.Mutex
	lib    []*scenarios.Scenario
	checks map[string][][]result.Check // scenario -> runs -> checks
	wall   time.Duration
}

// TestLibrarySpread runs every library scenario -spread times at its seed
// and as many at seed+1000, natively and side by side as go test ./lab
// runs them, and records each expectation's value in every run; TestMain
// then prints (and with -spread-doc writes) the table of spreads and
// bounds. It measures rather than checks, so it runs only when asked.
func TestLibrarySpread(t *testing.T) {
	if *spreadRuns <= 0 {
		t.Skip("measures the spread behind the library's bounds; run it with make bounds (-args -spread N)")
	}
	lib, err := scenarios.Library()
	if err != nil {
		t.Fatalf("the scenario library does not load:\n%v", err)
	}
	if *spreadGroup != "" {
		if !slices.Contains(scenarios.Groups, *spreadGroup) {
			t.Fatalf("-spread-group %q: groups are %s", *spreadGroup, strings.Join(scenarios.Groups, ", "))
		}
		lib = slices.DeleteFunc(slices.Clone(lib), func(sc *scenarios.Scenario) bool { return !slices.Contains(sc.Groups, *spreadGroup) })
	}
	spread.lib, spread.checks = lib, map[string][][]result.Check{}
	start := time.Now()
	var done int
	total := len(lib) * 2 * *spreadRuns
	t.Run("runs", func(t *testing.T) {
		for _, base := range lib {
			for _, offset := range []uint64{0, spreadSeedOffset} {
				for i := range *spreadRuns {
					t.Run(fmt.Sprintf("%s/seed+%d/%d", base.Name, offset, i), func(t *testing.T) {
						t.Parallel()
						sc := *base
						sc.Seed = base.Seed + offset
						var res *result.Run
						var err error
						synctest.Test(t, func(t *testing.T) { res, err = Run(t.Context(), &sc) })
						spread.mu.Lock()
						defer spread.mu.Unlock()
						done++
						if done%50 == 0 || done == total {
							fmt.Fprintf(os.Stderr, "[%4d/%d] runs, %.0f s\n", done, total, time.Since(start).Seconds())
						}
						switch {
						case errors.Is(err, ErrSharedAbsent):
							needs.Missing(t, needs.Shared, "%s: %v", sc.Name, err)
						case err != nil:
							t.Fatalf("%s seed %d: %v", sc.Name, sc.Seed, err)
						}
						spread.checks[sc.Name] = append(spread.checks[sc.Name], res.Checks)
					})
				}
			}
		}
	})
	spread.wall = time.Since(start)
}

// spreadRow is one expectation over every run.
type spreadRow struct {
	scenario, file string
	check          result.Check // the bounds, the window, the unit (from the first run)
	lo, hi         float64
	runs           int
	failed         int // runs whose check did not pass
	lower          float64
	upper          float64
	hasBound       [2]bool // min, max
	catchesTwo     bool    // every run's value doubled and halved falls outside the bounds
}

// spreadRows turns the runs into rows, one per expectation.
func spreadRows() []spreadRow {
	var rows []spreadRow
	for _, sc := range spread.lib {
		runs := spread.checks[sc.Name]
		if len(runs) == 0 {
			continue
		}
		for i, c := range runs[0] {
			r := spreadRow{scenario: sc.Name, file: sc.File, check: c, lo: math.Inf(1), hi: math.Inf(-1)}
			for _, run := range runs {
				v := run[i].Value
				r.lo, r.hi = min(r.lo, v), max(r.hi, v)
				r.runs++
				if !run[i].Pass {
					r.failed++
				}
			}
			r.lower, r.upper = ruleBounds(r.lo, r.hi)
			if c.Unit == scenarios.UnitFraction {
				r.upper = min(r.upper, 1) // a fraction ends at 100%
			}
			r.catchesTwo = catchesTwofold(c, r.lo) && catchesTwofold(c, r.hi)
			rows = append(rows, r)
		}
	}
	return rows
}

// ruleBounds is the rule the library's bounds follow: halfway, as ratios,
// between the spread and a twofold change. The upper bound is the
// geometric mean of the highest value and twice the lowest, the lower bound
// that of the lowest value and half the highest; with no spread, v/sqrt(2)
// and v*sqrt(2). Both exist only when the spread is narrower than 2x.
func ruleBounds(lo, hi float64) (lower, upper float64) {
	return math.Sqrt(lo * hi / 2), math.Sqrt(hi * 2 * lo)
}

// catchesTwofold says whether both a doubling and a halving of v fall
// outside c's bounds. A value of zero cannot change twofold; a fraction
// cannot double past 100%.
func catchesTwofold(c result.Check, v float64) bool {
	if v == 0 {
		return true
	}
	outside := func(x float64) bool {
		return (c.Min != nil && x < *c.Min) || (c.Max != nil && x > *c.Max)
	}
	doubled := outside(2*v) || (c.Unit == scenarios.UnitFraction && 2*v > 1)
	return doubled && outside(v/2)
}

// writeSpread prints the spread table and, with -spread-doc, writes it into
// the docs.
func writeSpread() error {
	rows := spreadRows()
	if len(rows) == 0 {
		return errors.New("no scenario ran (did -run select TestLibrarySpread?)")
	}
	var b strings.Builder
	heading := fmt.Sprintf("Measured %s: %d runs of each scenario at its seed and %d at seed+%d, natively and side by side as `go test ./lab` runs them (%s, %.0f s wall); `make bounds` measures it again.",
		time.Now().UTC().Format("2006-01-02"), *spreadRuns, *spreadRuns, spreadSeedOffset, machine(), spread.wall.Seconds())
	if *spreadGroup != "" {
		heading = fmt.Sprintf("Rows of group %s measured %s: %d runs of each of its scenarios at its seed and %d at seed+%d (%s, %.0f s wall); `make bounds BOUNDS_GROUP=%s` measures them again.",
			*spreadGroup, time.Now().UTC().Format("2006-01-02"), *spreadRuns, *spreadRuns, spreadSeedOffset, machine(), spread.wall.Seconds(), *spreadGroup)
	}
	b.WriteString(heading + "\n\n")
	b.WriteString(spreadTableHead)
	var loose, failing []string
	for _, r := range rows {
		c := r.check
		bound := boundText(c.Min, c.Max, c.Unit)
		rule := "—"
		if r.lo > 0 && r.hi < 2*r.lo {
			rule = fmt.Sprintf(">= %s and <= %s", result.FormatValue(r.lower, c.Unit), result.FormatValue(r.upper, c.Unit))
		} else if r.lo > 0 {
			rule = "none: the runs spread 2x or more"
		}
		catches := "yes"
		switch {
		case c.ExpectedFailure != "":
			// A criterion's figure the product misses: not set by the
			// rule, and a pass is the bound missed.
			rule, catches = "— (a criterion's figure)", "expected failure"
		case !r.catchesTwo:
			catches = "**no**"
			loose = append(loose, fmt.Sprintf("%s:%d %s", r.file, c.Line, c.Measure))
		}
		if r.failed > 0 {
			catches += fmt.Sprintf(" (**%d of %d runs fail**)", r.failed, r.runs)
			failing = append(failing, fmt.Sprintf("%s:%d %s (%d of %d runs)", r.file, c.Line, c.Measure, r.failed, r.runs))
		}
		fmt.Fprintf(&b, "| %s | %s [%v, %v) | %s - %s | %s | %s | %s |\n", r.scenario, c.Measure, c.From, c.To,
			result.FormatValue(r.lo, c.Unit), result.FormatValue(r.hi, c.Unit), bound, rule, catches)
	}
	fmt.Println()
	fmt.Print(b.String())
	for _, l := range loose {
		fmt.Println("loose (a 2x change passes):", l)
	}
	for _, f := range failing {
		fmt.Println("fails in some runs:", f)
	}
	if *spreadDoc {
		root, err := moduleRoot()
		if err != nil {
			return err
		}
		table := b.String()
		if *spreadGroup != "" {
			doc, err := os.ReadFile(filepath.Join(root, docregion.Bounds.File))
			if err != nil {
				return err
			}
			i, j, err := docregion.Bounds.Find(string(doc))
			if err != nil {
				return err
			}
			lib, err := scenarios.Library()
			if err != nil {
				return err
			}
			table = mergeGroupRows(string(doc[i:j]), lib, *spreadGroup, heading, table)
		}
		if err := docregion.Bounds.Write(root, table); err != nil {
			return err
		}
		fmt.Printf("%s: bounds table rewritten from this run\n", docregion.Bounds.File)
	}
	return nil
}

// boundText writes a check's bounds as the report does.
func boundText(lo, hi *float64, u scenarios.Unit) string {
	var want []string
	if lo != nil {
		want = append(want, ">= "+result.FormatValue(*lo, u))
	}
	if hi != nil {
		want = append(want, "<= "+result.FormatValue(*hi, u))
	}
	if len(want) == 0 {
		return "none"
	}
	return strings.Join(want, " and ")
}

// machine names the machine for the table's heading.
func machine() string {
	return fmt.Sprintf("%s/%s, %d cores, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
}

// TestRuleBounds checks the rule's arithmetic: with no spread, v/sqrt(2)
// and v*sqrt(2); every run inside; a doubling or halving of any run
// outside.
func TestRuleBounds(t *testing.T) {
	lo, hi := ruleBounds(10, 10)
	if math.Abs(lo-10/math.Sqrt2) > 1e-9 || math.Abs(hi-10*math.Sqrt2) > 1e-9 {
		t.Fatalf("no spread: got [%v, %v], want [%v, %v]", lo, hi, 10/math.Sqrt2, 10*math.Sqrt2)
	}
	for _, run := range [][2]float64{{50, 60}, {13.3, 13.4}, {1, 1.9}} {
		l, u := ruleBounds(run[0], run[1])
		c := result.Check{Min: &l, Max: &u}
		if !(l <= run[0] && u >= run[1]) {
			t.Errorf("runs %v: bounds [%v, %v] do not hold them", run, l, u)
		}
		if !catchesTwofold(c, run[0]) || !catchesTwofold(c, run[1]) {
			t.Errorf("runs %v: bounds [%v, %v] let a 2x change pass", run, l, u)
		}
	}
	if slices.Contains([]bool{catchesTwofold(result.Check{Max: ptr(1.0)}, 0.6)}, true) {
		t.Error("a one-sided bound must not catch a halving")
	}
}

func ptr[T any](v T) *T { return &v }

// spreadTableHead is the bounds table's heading.
const spreadTableHead = "| scenario | measure | runs: lowest - highest | bound | the rule's bound | a 2x change fails |\n|---|---|---|---|---|---|\n"

// mergeGroupRows is the bounds table with the rows of group's scenarios
// taken from measured (a table of their rows alone) and every other row
// kept from current (the docs' table), in the library's order; current's
// heading is kept, with a paragraph saying when the group's rows were
// measured (replacing one from an earlier run of the same group).
func mergeGroupRows(current string, lib []*scenarios.Scenario, group, heading, measured string) string {
	inGroup := map[string]bool{}
	order := map[string]int{}
	for k, sc := range lib {
		order[sc.Name] = k
		inGroup[sc.Name] = slices.Contains(sc.Groups, group)
	}
	type row struct {
		scenario, line string
	}
	var rows []row
	var paragraphs []string
	cell := func(line string) string { return strings.TrimSpace(strings.SplitN(line, "|", 3)[1]) }
	for _, line := range strings.Split(strings.TrimSpace(current), "\n") {
		switch {
		case strings.HasPrefix(line, "| scenario |"), strings.HasPrefix(line, "|---"):
		case strings.HasPrefix(line, "| "):
			if !inGroup[cell(line)] {
				rows = append(rows, row{cell(line), line})
			}
		case strings.TrimSpace(line) != "" && !strings.HasPrefix(line, "Rows of group "+group+" measured"):
			paragraphs = append(paragraphs, line)
		}
	}
	for _, line := range strings.Split(measured, "\n") {
		if strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "| scenario |") {
			rows = append(rows, row{cell(line), line})
		}
	}
	slices.SortStableFunc(rows, func(a, b row) int { return order[a.scenario] - order[b.scenario] })
	var b strings.Builder
	for _, p := range append(paragraphs, heading) {
		b.WriteString(p + "\n\n")
	}
	b.WriteString(spreadTableHead)
	for _, r := range rows {
		b.WriteString(r.line + "\n")
	}
	return b.String()
}

// Measuring one group rewrites its rows and keeps every other row and the
// heading, in the library's order.
func TestMergeGroupRows(t *testing.T) {
	lib := []*scenarios.Scenario{{Name: "a"}, {Name: "b", Groups: []string{"rmcat"}}, {Name: "c"}}
	current := "Measured once.\n\n" + spreadTableHead + "| a | x | 1 |\n| b | x | old |\n| c | x | 3 |\n"
	got := mergeGroupRows(current, lib, "rmcat", "Rows of group rmcat measured today.", spreadTableHead+"| b | x | new |\n| b | y | new |\n")
	want := "Measured once.\n\nRows of group rmcat measured today.\n\n" + spreadTableHead + "| a | x | 1 |\n| b | x | new |\n| b | y | new |\n| c | x | 3 |\n"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	again := mergeGroupRows(got, lib, "rmcat", "Rows of group rmcat measured tomorrow.", spreadTableHead+"| b | x | newer |\n")
	if strings.Count(again, "Rows of group rmcat") != 1 || !strings.Contains(again, "tomorrow") || strings.Contains(again, "| b | y |") {
		t.Fatalf("a second run replaces the group's paragraph and rows:\n%s", again)
	}
}
