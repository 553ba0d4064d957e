package lab

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nuvirahub/latencylab/agent/gcc"
	"github.com/nuvirahub/latencylab/lab/measure"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/scenarios"
)

// TestGCCDropTailQueue runs GCC (both halves, draft-ietf-rmcat-gcc-02
// sections 5 and 6) on a 500 kbit/s link behind a drop-tail queue, the
// case where the delay-based half alone let the queue stay full: the delay
// trend of a full queue is flat, and the target rose above the link's rate
// while the latency reached a second. With a 300 ms queue and a start at
// 2 Mbit/s, and with a 30 ms queue (the draft's own case for the loss-based
// half: "if the queues are very short, over-use will only be visible
// through packet losses") and a start at 1 Mbit/s, the target must stay
// within 5% of the link's rate once the start is over, and the latency far
// below 0.8 s. The ABR runs beside it for the log.
//
// The short queue's start is twice the link's rate so that the start
// overflows the queue whatever the delay-based half does: from 300 kbit/s
// the ramp met the link with under 10% loss in one native run of six, the
// goroutines' scheduling deciding which.
func TestGCCDropTailQueue(t *testing.T) {
	defaults, err := os.ReadFile("../scenarios/library/defaults.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const (
		capacity = 500e3
		margin   = 0.05
		settled  = 15 * time.Second // after the start's overshoot and its queue
	)
	var log strings.Builder
	log.WriteString("| case | controller | target max after 15 s | latency median | p95 | decisions |\n|---|---|---|---|---|---|\n")
	for _, c := range []struct{ name, queue, start string }{
		{"300ms-queue", "300ms", "2Mbit/s"},
		{"30ms-queue", "30ms", "1Mbit/s"},
	} {
		for _, kind := range []string{"gcc", "abr"} {
			t.Run(c.name+"/"+kind, func(t *testing.T) {
				y := fmt.Sprintf(`name: gcc-drop-tail-%s
description: a 500 kbit/s link behind a %s drop-tail queue, the controller starting at %s
duration: 60s
network:
  down: {delay: 20ms, rate: 500kbit/s, queue: {delay: %s}}
controller: {kind: %s, bitrate: %s, min: 100kbit/s, max: 4Mbit/s}
`, c.name, c.queue, c.start, c.queue, kind, c.start)
				sc, err := scenarios.Parse("lab/gcc-drop-tail.yaml", []byte(y), defaults)
				if err != nil {
					t.Fatal(err)
				}
				var res *result.Run
				synctest.Test(t, func(t *testing.T) {
					if res, err = Run(t.Context(), sc); err != nil {
						t.Fatal(err)
					}
				})
				top, _ := measure.TargetAt(res, settled)
				for _, tr := range res.Targets {
					if tr.At >= settled {
						top = max(top, tr.Bps)
					}
				}
				median, err := measure.Of(res, "latency.median", settled, res.Duration)
				if err != nil {
					t.Fatal(err)
				}
				p95, err := measure.Of(res, "latency.p95", settled, res.Duration)
				if err != nil {
					t.Fatal(err)
				}
				fmt.Fprintf(&log, "| %s | %s | %.0f kbit/s | %.0f ms | %.0f ms | %d |\n", c.name, kind,
					float64(top)/1e3, median*1e3, p95*1e3, len(res.Decisions))
				if kind != "gcc" {
					return
				}
				if float64(top) > capacity*(1+margin) {
					t.Errorf("target up to %d bit/s after %v: more than %.0f%% above the link's %.0f", top, settled, margin*100, capacity)
				}
				if median > 0.150 || p95 > 0.300 {
					t.Errorf("latency after %v: median %.0f ms, p95 %.0f ms; want at most 150 ms and 300 ms", settled, median*1e3, p95*1e3)
				}
				known := []string{gcc.RuleDelayDecrease, gcc.RuleDelayIncrease, gcc.RuleDelayAdditive,
					gcc.RuleLossDecrease, gcc.RuleLossIncrease, gcc.RuleClamp}
				lossCut := false
				for _, d := range res.Decisions {
					if d.Old == d.New || !slices.Contains(known, d.Rule) {
						t.Errorf("decision %+v: a decision changes the target, by a known rule", d)
					}
					if d.Rule == gcc.RuleLossDecrease && d.Loss > 0.10 {
						lossCut = true
					}
				}
				if !lossCut {
					t.Errorf("no loss-based decrease: the queue's losses never reached the controller")
				}
			})
		}
	}
	t.Log("\n" + log.String())
}
