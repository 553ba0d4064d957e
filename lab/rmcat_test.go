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
	"github.com/nuvirahub/latencylab/internal/needs"
	"github.com/nuvirahub/latencylab/lab/measure"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/scenarios"
)

// The RFC 8867 suite's flags (make rmcat): go test ./lab -run '^TestRMCAT$'
// -args -rmcat-both -rmcat-doc.
var (
	rmcatBoth = flag.Bool("rmcat-both", false, "TestRMCAT: also run every case of the rmcat group with the other controller (abr <-> gcc) and print the two side by side")
	rmcatDoc  = flag.Bool("rmcat-doc", false, "TestRMCAT: with -rmcat-both, rewrite the side-by-side table of docs/rmcat.md")
)

// TestRMCAT runs RFC 8867's test cases (the rmcat group, docs/rmcat.md)
// with each scenario's own controller, the product's ABR, and judges their
// expectations, as every group test does; a criterion the ABR misses is
// marked as an expected failure in its scenario, so it passes while missed
// and fails once met. With -rmcat-both it also runs every case with the
// other controller (GCC for the ABR, and the reverse), not judged, and
// prints a table of the two side by side per case and figure (written to
// -out's rmcat.md, and with -rmcat-doc into docs/rmcat.md). The second
// pass doubles the suite's time, so it runs only when asked.
func TestRMCAT(t *testing.T) {
	if *rmcatDoc && !*rmcatBoth {
		t.Fatal("-rmcat-doc writes the side-by-side table: it needs -rmcat-both")
	}
	t.Run("own", func(t *testing.T) { runGroup(t, "rmcat", "RMCAT/own") })
	if !*rmcatBoth {
		t.Log("the second controller's pass runs with -args -rmcat-both (make rmcat)")
		return
	}
	lib, err := scenarios.Library()
	if err != nil {
		t.Fatal(err)
	}
	var cases []*scenarios.Scenario
	for _, sc := range lib {
		if slices.Contains(sc.Groups, "rmcat") {
			cases = append(cases, sc)
		}
	}
	var mu sync.Mutex
	other := map[string]*result.Run{}
	ranOther := map[string]bool{}
	t.Run("other", func(t *testing.T) {
		for _, base := range cases {
			t.Run(base.Name, func(t *testing.T) {
				t.Parallel()
				mu.Lock()
				ranOther[base.Name] = true
				mu.Unlock()
				sc, err := withOtherController(base)
				if err != nil {
					t.Fatal(err)
				}
				var res *result.Run
				synctest.Test(t, func(t *testing.T) { res, err = Run(t.Context(), sc) })
				switch {
				case errors.Is(err, ErrSharedAbsent):
					needs.Missing(t, needs.Shared, "%s: %v", sc.Name, err)
				case err != nil:
					t.Fatalf("%s with %s: %v", sc.Name, sc.Controller.Kind, err)
				}
				mu.Lock()
				other[sc.Name] = res
				mu.Unlock()
			})
		}
	})
	var rows []rmcatCase
	filtered := 0
	for _, sc := range cases {
		own := ownRun(sc.Name)
		if !ranOther[sc.Name] || !suiteRan(sc.Name) {
			filtered++ // left out by the -run filter
			continue
		}
		if own == nil || other[sc.Name] == nil {
			continue // skipped (no shared traces) or failed, and said so
		}
		rows = append(rows, rmcatCase{sc: sc, own: own, other: other[sc.Name]})
	}
	if len(rows) == 0 && filtered > 0 {
		t.Skipf("skipping the table: the -run filter left out %d of the %d cases' runs with one controller or the other", filtered, len(cases))
	}
	if len(rows) == 0 {
		t.Fatal("no case ran with both controllers")
	}
	table := rmcatTable(rows)
	t.Log("\n" + table)
	if *suiteOut != "" {
		if err := os.MkdirAll(*suiteOut, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(*suiteOut, "rmcat.md"), []byte(table), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if *rmcatDoc {
		if len(rows) < len(cases) {
			t.Fatalf("%d of %d cases ran with both controllers: the table in %s is rewritten only from all of them", len(rows), len(cases), docregion.RMCAT.File)
		}
		root, err := moduleRoot()
		if err != nil {
			t.Fatal(err)
		}
		if err := docregion.RMCAT.Write(root, table); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: side-by-side table rewritten from this run", docregion.RMCAT.File)
	}
}

// withOtherController is sc with the other adaptive controller (abr <->
// gcc), judged by the same expectations, for the suite's second pass.
// Session and reverse-media flows that leave their controller out take
// the scenario's, so they change with it: RFC 8867's competing flows run
// the same controller.
func withOtherController(base *scenarios.Scenario) (*scenarios.Scenario, error) {
	sc := *base
	kind := "gcc"
	if base.Controller.Kind == "gcc" {
		kind = "abr"
	}
	c, err := base.Controller.As(kind)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", base.Name, err)
	}
	sc.Controller = c
	return &sc, sc.Validate()
}

// ownRun is the group test's run of a scenario with its own controller.
func ownRun(name string) *result.Run {
	suite.mu.Lock()
	defer suite.mu.Unlock()
	if r := suite.runs[name]; r != nil && r.entry.Err == nil {
		return r.entry.Result
	}
	return nil
}

// suiteRan says whether the suite's run of the named scenario happened in
// this test binary (it may have failed or been skipped), rather than been
// left out by a -run filter.
func suiteRan(name string) bool {
	suite.mu.Lock()
	defer suite.mu.Unlock()
	return suite.runs[name] != nil
}

// rmcatCase is one case run with both controllers.
type rmcatCase struct {
	sc         *scenarios.Scenario
	own, other *result.Run
}

// rmcatWindow is where the table's figures are taken: from the latest
// start of a flow (when every flow runs) to the end.
func rmcatWindow(sc *scenarios.Scenario) time.Duration {
	var from time.Duration
	for _, f := range sc.Traffic {
		from = max(from, f.Start)
	}
	return from
}

// rmcatTable sets the two controllers side by side, a row per case and
// figure: the scenario's own session (main), each competing flow, Jain's
// index where several media sessions share the downlink, the freezes, and
// how many of the case's bounds each controller met.
func rmcatTable(rows []rmcatCase) string {
	var b strings.Builder
	own := rows[0].sc.Controller.Kind
	other := "gcc"
	if own == "gcc" {
		other = "abr"
	}
	fmt.Fprintf(&b, "Figures over [latest flow start, end) of each case, seed %d; `main` is the scenario's own session. Bounds met: the case's expectations whose bounds the run met, by line of the scenario file: RFC criteria, and the ABR's own figures for regressions, which the other controller need not meet (an expected failure's bound counts as missed when missed).\n\n", rows[0].sc.Seed)
	fmt.Fprintf(&b, "| case | figure | %s | %s |\n|---|---|---|---|\n", strings.ToUpper(own), strings.ToUpper(other))
	for _, c := range rows {
		from := rmcatWindow(c.sc)
		figure := func(name, label, flow string) {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", c.sc.Name, label,
				rmcatFigure(c.own, name, flow, from), rmcatFigure(c.other, name, flow, from))
		}
		figure("flow.latency.median", "main latency median", "main")
		figure("flow.latency.p95", "main latency p95", "main")
		figure("flow.throughput", "main throughput", "main")
		figure("flow.share", "main share", "main")
		var web []string
		for _, f := range c.sc.Traffic {
			if f.Kind == "web" {
				web = append(web, f.Name) // summed below: short flows one by one say little
				continue
			}
			figure("flow.throughput", f.Name+" throughput", f.Name)
			if f.Kind == "session" || f.Kind == "reverse-media" {
				figure("flow.latency.median", f.Name+" latency median", f.Name)
			}
		}
		if len(web) > 0 {
			fmt.Fprintf(&b, "| %s | web flows' throughput (%d, summed) | %s | %s |\n", c.sc.Name, len(web),
				rmcatSum(c.own, web, from), rmcatSum(c.other, web, from))
		}
		if slices.ContainsFunc(c.sc.Traffic, func(f scenarios.Flow) bool { return f.Kind == "session" }) {
			figure("fairness.jain", "fairness (Jain)", "")
		}
		figure("freezes", "main freezes", "")
		fmt.Fprintf(&b, "| %s | bounds met | %s | %s |\n", c.sc.Name, boundsMet(c.own), boundsMet(c.other))
	}
	return b.String()
}

// rmcatFigure measures one figure of a run from an instant to the end.
func rmcatFigure(r *result.Run, name, flow string, from time.Duration) string {
	m, ok := scenarios.LookupMeasurement(name)
	if !ok {
		return "?"
	}
	v, err := measure.OfWith(r, name, from, 0, measure.Params{Flow: flow})
	switch {
	case err != nil:
		return "—"
	case m.Unit == scenarios.UnitRatio:
		return fmt.Sprintf("%.3f", v)
	}
	return result.FormatValue(v, m.Unit)
}

// rmcatSum is the flows' throughputs summed, from an instant to the end.
func rmcatSum(r *result.Run, flows []string, from time.Duration) string {
	var sum float64
	for _, f := range flows {
		v, err := measure.OfWith(r, "flow.throughput", from, 0, measure.Params{Flow: f})
		if err != nil {
			return "—"
		}
		sum += v
	}
	return result.FormatValue(sum, scenarios.UnitRate)
}

// boundsMet counts the checks whose bounds the run met, and names the
// missed ones.
func boundsMet(r *result.Run) string {
	var met int
	var missed []string
	for _, c := range r.Checks {
		if c.Within {
			met++
		} else {
			missed = append(missed, fmt.Sprintf("%s:%d", c.Measure, c.Line))
		}
	}
	s := fmt.Sprintf("%d of %d", met, len(r.Checks))
	if len(missed) > 0 {
		s += " (missed: " + strings.Join(missed, ", ") + ")"
	}
	return s
}
