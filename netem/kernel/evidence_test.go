//go:build linux

package kernel

import (
	"testing"
	"time"

	"github.com/nuvirahub/latencylab/internal/evidence"
)

// The flows are real kernel TCP in real time, and their utilisations move
// with the machine's load: on this 2-core machine at a load of about 15, a
// run lay up to 20% under the figures written (CUBIC's bulk flow 38.7%
// against 48.6%, Reno's iperf3 42.8% against 51.6%). So the figures are
// pinned by the library's bound rule with no spread (a factor of 1.41 either
// way), not to their decimals.

// pinN11Evidence pins the figures of the N11 evidence that
// TestIperf3MatchesBulk measures: the flows' length, and each controller's share of the link in
// the lab's bulk flow and in iperf3's, as the command the evidence names
// (LAB_N11_SECONDS=20) measures them. Flows of another length than the
// evidence's (LAB_N11_SECONDS unset: 4 s) cannot judge its figures.
func pinN11Evidence(t *testing.T, d time.Duration, bulk, iperf map[string]float64) {
	if t.Failed() || len(bulk) != len(controllers) {
		return
	}
	p := evidence.For(t, "N11", "LAB_N11_SECONDS=20 go test ./netem/kernel -run 'N11|Iperf3' -v")
	p.Figure(`(\d+) s bulk flows`, d.Seconds())
	if err := p.Mismatch(); err != nil {
		t.Logf("the N11 evidence's figures are for other flows than these %v ones: not judged (LAB_N11_SECONDS=20 runs them)", d)
		return
	}
	p.Rule(`BBR ([\d.]+)%, CUBIC ([\d.]+)%, Reno ([\d.]+)% of the link`, 100*bulk["bbr"], 100*bulk["cubic"], 100*bulk["reno"])
	p.Rule(`iperf3 over the same links ([\d.]+), ([\d.]+), ([\d.]+)%`, 100*iperf["bbr"], 100*iperf["cubic"], 100*iperf["reno"])
	p.Done()
}
