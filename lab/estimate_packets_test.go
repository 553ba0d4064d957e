package lab

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/nuvirahub/latencylab/lab/estimate"
	"github.com/nuvirahub/latencylab/scenarios"
)

// TestEstimateCountsTheLibrarysPackets holds the estimate that runs print
// at their start (lab test, the sweep, the nightly, compare) to what the
// library's sessions carry: the library's packets in all within 15% of
// the model's, and each session that carries more than 50 thousand (the
// ones that decide a run's time) within a factor of 1.5. Not closer: an
// adaptive controller without a written ceiling is taken at its start,
// and the ABR climbs above it where the link allows: abr-capacity-drop
// carried 59 to 63 thousand packets natively against the estimate's 44.8
// (1.32 to 1.41 times) over runs on 2026-12-02 and 03, and a CI run failed
// a bound of 1.4 on it. Following the climb in the estimate (up by the
// ABR's step every hold, towards the bottleneck's rate) put it within 10%
// but took abr-busy-pc-old, whose busy encoder keeps it far below its
// 1 Gbit/s link, from 8 thousand to 260 thousand, and the library's
// total 23% over: the encoder, not the link, stops that climb, and the
// estimate does not model the encoder. A factor of 1.5 is still inside
// the factor of two the estimate promises (lab/estimate). The sessions
// are the library suite's, run once per test binary and shared with
// TestLibrary.
func TestEstimateCountsTheLibrarysPackets(t *testing.T) {
	lib, err := scenarios.Library()
	if err != nil {
		t.Fatal(err)
	}
	// The sessions side by side, as the suite runs them (each runs once
	// per test binary, whichever test reaches it first).
	entries := make([]SuiteEntry, len(lib))
	t.Run("sessions", func(t *testing.T) {
		for _, sc := range estimate.Native.Longest(lib) {
			i := slices.Index(lib, sc)
			t.Run(sc.Name, func(t *testing.T) {
				t.Parallel()
				entries[i] = runLibraryScenario(t, sc, fmt.Sprintf("go test ./lab -run 'Library/%s$' -v", sc.Name))
			})
		}
	})
	// A -run filter that leaves out some of the sessions (go test ./lab
	// -run 'Library/NAME$' matches this test's name but none of its
	// subtests) leaves their entries empty: the library's total is then
	// not the library's, so there is nothing to hold the estimate to.
	var ran []string
	for i, sc := range lib {
		if entries[i].Scenario != nil {
			ran = append(ran, sc.Name)
		}
	}
	if len(ran) < len(lib) {
		t.Skipf("skipping: the -run filter ran %d of the library's %d sessions, and the estimate is held to them all (go test ./lab -run '^TestEstimateCountsTheLibrarysPackets$')", len(ran), len(lib))
	}
	var predicted, counted float64
	var table strings.Builder
	table.WriteString("| scenario | packets counted | estimated | ratio |\n|---|---|---|---|\n")
	for i, sc := range lib {
		e := entries[i]
		if e.Skipped {
			continue // its trace is in ../shared: neither side counts it
		}
		if e.Err != nil {
			t.Fatalf("%s: %v", sc.Name, e.Err)
		}
		links := e.Result.Links
		got := float64(links.Up.OfferedPackets + links.Down.OfferedPackets)
		want := estimate.Packets(sc)
		predicted += want
		counted += got
		fmt.Fprintf(&table, "| %s | %.0f | %.0f | %.2f |\n", sc.Name, got, want, want/got)
		if got > 50_000 && (want < got/1.5 || want > got*1.5) {
			t.Errorf("%s: %.0f packets estimated, %.0f counted: off by more than a factor of 1.5", sc.Name, want, got)
		}
	}
	t.Logf("\n%s| all | %.0f | %.0f | %.2f |", table.String(), counted, predicted, predicted/counted)
	if predicted < counted/1.15 || predicted > counted*1.15 {
		t.Errorf("the library: %.0f packets estimated, %.0f counted: more than 15%% off", predicted, counted)
	}
}
