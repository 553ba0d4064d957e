package lab

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
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
	fmt.Fprintf(&b, "Measured %s: %d runs of each scenario at its seed and %d at seed+%d, natively and side by side as `go test ./lab` runs them (%s, %.0f s wall); `make bounds` measures it again.\n\n",
		time.Now().UTC().Format("2006-01-02"), *spreadRuns, *spreadRuns, spreadSeedOffset, machine(), spread.wall.Seconds())
	b.WriteString("| scenario | measure | runs: lowest - highest | bound | the rule's bound | a 2x change fails |\n|---|---|---|---|---|---|\n")
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
		if !r.catchesTwo {
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
		if err := docregion.Bounds.Write(root, b.String()); err != nil {
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
