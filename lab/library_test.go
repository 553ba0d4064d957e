package lab

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nuvirahub/latencylab/internal/docregion"
	"github.com/nuvirahub/latencylab/internal/gcdefault"
	"github.com/nuvirahub/latencylab/internal/needs"
	"github.com/nuvirahub/latencylab/lab/estimate"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/scenarios"
)

// The suite's flags: go test ./lab -args -out results -readme.
var (
	suiteOut    = flag.String("out", "", "write a result folder: a JSON file per scenario, summary.md, reproduction.md")
	suiteReadme = flag.Bool("readme", false, "rewrite the reproduction table (docs/reproduction.md) and the README's class counts from this run")
)

// suite remembers each scenario's run: a scenario in two groups runs once
// per test binary, whichever entry point reaches it first.
var suite struct {
	mu      sync.Mutex
	runs    map[string]*suiteRun
	done    int
	library int
}

type suiteRun struct {
	once  sync.Once
	entry SuiteEntry
}

func TestMain(m *testing.M) {
	gcdefault.Set()
	flag.Parse()
	// A generator checks the files it will write before the long run, so a
	// missing marker fails at once and names the file.
	if err := checkOutputs(); err != nil {
		fmt.Fprintln(os.Stderr, "lab: nothing ran:", err)
		os.Exit(2)
	}
	code := m.Run()
	if *suiteOut != "" || *suiteReadme {
		if err := writeSuite(); err != nil {
			fmt.Fprintln(os.Stderr, "suite:", err)
			code = 1
		}
	}
	if *spreadRuns > 0 && code == 0 {
		if err := writeSpread(); err != nil {
			fmt.Fprintln(os.Stderr, "bounds:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// checkOutputs checks, before anything runs, what this run will write:
// the regions of the docs that -readme and -spread rewrite, and that the
// reproduction's inputs load.
func checkOutputs() error {
	var regions []docregion.Region
	if *suiteReadme {
		regions = append(regions, docregion.Reproduction, docregion.ClassCounts)
	}
	if *spreadRuns > 0 && *spreadDoc {
		regions = append(regions, docregion.Bounds)
	}
	if *rmcatDoc {
		regions = append(regions, docregion.RMCAT)
	}
	if len(regions) == 0 && *suiteOut == "" {
		return nil
	}
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	var errs []error
	for _, r := range regions {
		errs = append(errs, r.Check(root))
	}
	if *suiteOut != "" || *suiteReadme {
		_, err := LoadReproduction()
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// writeSuite writes the result folder and the docs' reproduction table from
// every scenario that ran.
func writeSuite() error {
	suite.mu.Lock()
	var entries []SuiteEntry
	for _, r := range suite.runs {
		entries = append(entries, r.entry)
	}
	suite.mu.Unlock()
	if len(entries) == 0 {
		return errors.New("no scenario ran (did -run select any?)")
	}
	slices.SortFunc(entries, func(a, b SuiteEntry) int { return strings.Compare(a.Scenario.Name, b.Scenario.Name) })
	rep, err := LoadReproduction()
	if err != nil {
		return err
	}
	fmt.Println()
	fmt.Print(SummaryTable(entries))
	if *suiteOut != "" {
		if err := WriteSuite(*suiteOut, entries, rep); err != nil {
			return err
		}
		fmt.Printf("\nresults: %d scenarios in %s (a JSON file each, summary.md, reproduction.md)\n", len(entries), *suiteOut)
	}
	if *suiteReadme {
		root, err := moduleRoot()
		if err != nil {
			return err
		}
		if err := docregion.Reproduction.Write(root, rep.Table(entries)); err != nil {
			return err
		}
		if err := docregion.ClassCounts.Write(root, ClassCounts(rep.Findings)); err != nil {
			return err
		}
		fmt.Printf("%s: reproduction table rewritten from this run; %s: class counts\n", docregion.Reproduction.File, docregion.ClassCounts.File)
	}
	return nil
}

// runGroup runs every library scenario of group (all of them for "") as a
// subtest in its own synctest bubble, in parallel, and fails on every
// expectation not met.
func runGroup(t *testing.T, group, entry string) {
	lib, err := scenarios.Library()
	if err != nil {
		t.Fatalf("the scenario library does not load:\n%v", err)
	}
	suite.mu.Lock()
	suite.library = len(lib)
	suite.mu.Unlock()
	n := 0
	// The costliest first: the parallel subtests start about in the order
	// they are made, and a long session started last would run alone.
	for _, sc := range estimate.Native.Longest(lib) {
		if group != "" && !slices.Contains(sc.Groups, group) {
			continue
		}
		n++
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel()
			e := runLibraryScenario(t, sc, fmt.Sprintf("go test ./lab -run '%s/%s$' -v", entry, sc.Name))
			switch {
			case e.Skipped:
				needs.Missing(t, needs.Shared, "%s: %v", sc.Name, e.Err)
			case e.Err != nil:
				t.Fatalf("%s (%s): %v", sc.Name, sc.File, e.Err)
			}
			for _, c := range e.Result.Checks {
				if !c.Pass {
					t.Errorf("%s:%d: expectation not met: %s", sc.File, c.Line, c)
				}
				// The bounds must catch a regression: a figure that
				// doubles or halves fails (docs/testing.md says how the
				// bounds were set).
				// (An expected failure's bound is a criterion's figure,
				// not one set from runs.)
				if c.Pass && c.ExpectedFailure == "" && !catchesTwofold(c, c.Value) {
					t.Errorf("%s:%d: bound too loose: %s would still pass at twice or half the value; set it by make bounds", sc.File, c.Line, c)
				}
			}
			s := e.Result.Summary
			t.Logf("%s: latency median %v p95 %v max %v, %d freezes, %.1f fps", sc.Name,
				s.Latency.Median, s.Latency.P95, s.Latency.Max, len(s.Freezes), s.FPS)
		})
	}
	if n == 0 {
		t.Fatalf("no scenario of the library is in group %q", group)
	}
}

// runLibraryScenario runs sc once per test binary and prints a progress line.
func runLibraryScenario(t *testing.T, sc *scenarios.Scenario, command string) SuiteEntry {
	suite.mu.Lock()
	if suite.runs == nil {
		suite.runs = map[string]*suiteRun{}
	}
	r := suite.runs[sc.Name]
	if r == nil {
		r = &suiteRun{}
		suite.runs[sc.Name] = r
	}
	suite.mu.Unlock()
	r.once.Do(func() {
		r.entry = SuiteEntry{Scenario: sc, Command: command}
		start := time.Now()
		synctest.Test(t, func(t *testing.T) {
			res, err := Run(t.Context(), sc)
			r.entry.Result, r.entry.Err = res, err
			r.entry.Skipped = errors.Is(err, ErrSharedAbsent)
		})
		r.entry.Wall = time.Since(start)
		suite.mu.Lock()
		suite.done++
		fmt.Fprintf(os.Stderr, "[%2d/%d] %-28s %-7s %6.2f s wall for %v\n", suite.done, suite.library, sc.Name, r.entry.Status(), r.entry.Wall.Seconds(), sc.Duration)
		suite.mu.Unlock()
	})
	return r.entry
}

// The entry points, named the way users ask: go test ./lab -run Mobile.

func TestLibrary(t *testing.T)  { runGroup(t, "", "Library") }
func TestLAN(t *testing.T)      { runGroup(t, "lan", "LAN") }
func TestMobile(t *testing.T)   { runGroup(t, "mobile", "Mobile") }
func TestCellular(t *testing.T) { runGroup(t, "cellular", "Cellular") }
func TestLossy(t *testing.T)    { runGroup(t, "lossy", "Lossy") }
func TestPipeline(t *testing.T) { runGroup(t, "pipeline", "Pipeline") }
func TestEncoder(t *testing.T)  { runGroup(t, "encoder", "Encoder") }
func TestABR(t *testing.T)      { runGroup(t, "abr", "ABR") }
func TestPath(t *testing.T)     { runGroup(t, "path", "Path") }
func TestTraffic(t *testing.T)  { runGroup(t, "traffic", "Traffic") }

// Another seed gives another run that still meets every expectation of the
// library: the bounds are written from the findings, not from one run. The
// RFC 8867 suite (group rmcat) is left to make bounds, which runs it ten
// times at seed+1000: its 1405 s of sessions, several at once, would add
// half a minute to every go test ./lab for one more seed.
func TestLibraryAnotherSeed(t *testing.T) {
	lib, err := scenarios.Library()
	if err != nil {
		t.Fatalf("the scenario library does not load:\n%v", err)
	}
	for _, base := range lib {
		if slices.Contains(base.Groups, "rmcat") {
			continue
		}
		t.Run(base.Name, func(t *testing.T) {
			t.Parallel()
			sc := *base
			sc.Seed = base.Seed + 1000
			var res *result.Run
			var err error // each parallel subtest its own
			synctest.Test(t, func(t *testing.T) {
				res, err = Run(t.Context(), &sc)
			})
			if errors.Is(err, ErrSharedAbsent) {
				needs.Missing(t, needs.Shared, "%s: %v", sc.Name, err)
			}
			if err != nil {
				t.Fatalf("%s: %v", sc.Name, err)
			}
			for _, c := range res.Checks {
				if !c.Pass {
					t.Errorf("%s:%d: with seed %d: expectation not met: %s", sc.File, c.Line, sc.Seed, c)
				}
			}
		})
	}
}

// A scenario with random impairments (spikes at random instants) is another
// run under another seed.
func TestAnotherSeedIsAnotherRun(t *testing.T) {
	lib, err := scenarios.Library()
	if err != nil {
		t.Fatal(err)
	}
	idx := slices.IndexFunc(lib, func(s *scenarios.Scenario) bool { return s.Name == "mobile-spikes" })
	if idx < 0 {
		t.Fatal("the library has no mobile-spikes")
	}
	latencies := map[uint64][]time.Duration{}
	for _, seed := range []uint64{1, 2} {
		sc := *lib[idx]
		sc.Seed = seed
		synctest.Test(t, func(t *testing.T) {
			res, err := Run(t.Context(), &sc)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range res.Frames {
				latencies[seed] = append(latencies[seed], f.Latency)
			}
		})
	}
	if slices.Equal(latencies[1], latencies[2]) {
		t.Fatal("seeds 1 and 2 gave the same frame latencies: the spikes do not draw from the seed")
	}
}

// TestABRvsGCC runs every ABR scenario of the library (the fixed variants;
// RFC 8867's cases have their own pass, TestRMCAT -rmcat-both)
// again with Google Congestion Control (agent/gcc) in its place, and prints
// the two side by side: median latency, mean bitrate, decisions. Both must
// run, and GCC must react where the link changes or loses; it is not held
// to the ABR's expectations.
func TestABRvsGCC(t *testing.T) {
	lib, err := scenarios.Library()
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		name                 string
		abrMedian, gccMedian time.Duration
		abrRate, gccRate     float64
		abrDec, gccDec       int
	}
	suite.mu.Lock()
	suite.library = len(lib) // for the progress line of a session it runs first
	suite.mu.Unlock()
	var rows []row
	for _, base := range lib {
		if base.Controller.Kind != "abr" || strings.HasSuffix(base.Name, "-old") {
			continue
		}
		if slices.Contains(base.Groups, "rmcat") {
			// RFC 8867's cases, 1405 s of sessions, have their own pass
			// with the other controller (TestRMCAT -rmcat-both, make
			// rmcat), which judges them too.
			continue
		}
		r := row{name: base.Name}
		// The ABR's side is the library's own session, which go test
		// ./lab runs already (TestLibrary): the same scenario at the
		// same seed, run once per test binary.
		e := runLibraryScenario(t, base, fmt.Sprintf("go test ./lab -run 'Library/%s$' -v", base.Name))
		if e.Err != nil {
			t.Fatalf("%s: %v", base.Name, e.Err)
		}
		abr := e.Result
		r.abrMedian, r.abrRate, r.abrDec = abr.Summary.Latency.Median, abr.Summary.BitrateMean, len(abr.Decisions)
		sc := *base
		sc.Controller = scenarios.Controller{Kind: "gcc", Bitrate: base.Controller.Bitrate, Min: base.Controller.Min, Max: base.Controller.Max}
		var gcc *result.Run
		synctest.Test(t, func(t *testing.T) {
			var err error
			if gcc, err = Run(t.Context(), &sc); err != nil {
				t.Fatal(err)
			}
		})
		r.gccMedian, r.gccRate, r.gccDec = gcc.Summary.Latency.Median, gcc.Summary.BitrateMean, len(gcc.Decisions)
		if len(gcc.Decisions) == 0 && (sc.Name == "abr-capacity-drop" || sc.Name == "abr-lossy") {
			t.Errorf("%s: GCC made no decision on a link that changes or loses", sc.Name)
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		t.Fatal("the library has no ABR scenario")
	}
	var b strings.Builder
	b.WriteString("| scenario | ABR median | GCC median | ABR mean bitrate | GCC mean bitrate | ABR decisions | GCC decisions |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %.2f Mbit/s | %.2f Mbit/s | %d | %d |\n", r.name,
			msText(r.abrMedian), msText(r.gccMedian), r.abrRate/1e6, r.gccRate/1e6, r.abrDec, r.gccDec)
	}
	t.Log("\n" + b.String())
	if *suiteOut != "" {
		if err := os.MkdirAll(*suiteOut, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(*suiteOut, "abr-vs-gcc.md"), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
