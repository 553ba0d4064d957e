//go:build linux

package ccgrid

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/nuvirahub/latencylab/agent"
	"github.com/nuvirahub/latencylab/agent/abr"
	"github.com/nuvirahub/latencylab/internal/quantile"
	"github.com/nuvirahub/latencylab/lab"
	"github.com/nuvirahub/latencylab/lab/transport"
)

// mediaCase is one media session to run.
type mediaCase struct {
	col  Column
	mode transport.Kernel
}

// mediaCases lists the plan's sessions in run order: on each column QUIC
// then the tunnel over each controller, then on the N11 column QUIC
// beside each competing flow.
func mediaCases(g Grid) []mediaCase {
	m := g.Media
	var cs []mediaCase
	for _, name := range m.Columns {
		col := g.Columns[slices.IndexFunc(g.Columns, func(c Column) bool { return c.Name == name })]
		cs = append(cs, mediaCase{col: col, mode: transport.Kernel{Transport: transport.KernelQUIC}})
		for _, cc := range m.Controllers {
			cs = append(cs, mediaCase{col: col, mode: transport.Kernel{Transport: transport.KernelWebSocket, Controller: cc}})
		}
	}
	if i := slices.IndexFunc(g.Columns, Column.IsN11); i >= 0 {
		for _, cc := range m.Competing {
			cs = append(cs, mediaCase{col: g.Columns[i], mode: transport.Kernel{Transport: transport.KernelQUIC, Competing: cc}})
		}
	}
	return cs
}

// runMedia runs the plan's sessions one at a time (each makes its own
// pair), appending each to rep.Media; on an error it marks rep
// incomplete.
func runMedia(ctx context.Context, g Grid, root string, rep *Report, start time.Time, progress io.Writer) error {
	cases := mediaCases(g)
	for i, mc := range cases {
		c, err := runMediaCell(ctx, g, mc, root)
		if err != nil {
			name := mc.mode.Transport + "/" + mc.mode.Controller + "+" + mc.mode.Competing
			rep.Incomplete = fmt.Sprintf("stopped at media %s on %s: %v", name, mc.col.Name, err)
			return fmt.Errorf("ccgrid: media %s on %s: %w", name, mc.col.Name, err)
		}
		rep.Media = append(rep.Media, c)
		line := fmt.Sprintf("[media %2d/%d] %-16s %-16s latency median %4.0f ms p95 %4.0f ms  media %.2f Mbit/s",
			i+1, len(cases), c.Label(), mc.col.Name, c.LatencyMedianMS, c.LatencyP95MS, c.MediaGoodputBps/1e6)
		if c.Competing != "" {
			line += fmt.Sprintf("  vs %s flow %.2f Mbit/s (share %.0f%%)", c.Competing, c.CompetingGoodputBps/1e6, 100*c.CompetingShare)
		}
		fmt.Fprintf(progress, "%s   %4.0f s so far\n", line, time.Since(start).Seconds())
	}
	return nil
}

// runMediaCell runs one session: the lab's pipeline with the ABR across
// the kernel mode, the column's impairments on both links, in real time.
func runMediaCell(ctx context.Context, g Grid, mc mediaCase, root string) (MediaCell, error) {
	down, err := mc.col.Impairments(root, true)
	if err != nil {
		return MediaCell{}, err
	}
	up, err := mc.col.Impairments(root, false)
	if err != nil {
		return MediaCell{}, err
	}
	a, err := abr.New(abr.Config{})
	if err != nil {
		return MediaCell{}, err
	}
	mode := mc.mode
	s := lab.Session{
		Seed: g.Seed, Duration: g.Media.Duration(),
		Uplink: up, Downlink: down, // the agent is in A: its video crosses A to B
		Transport: mode,
		// Time zero after the handshake's allowance, as scenarios run.
		Lead:  lab.HandshakeLead,
		Agent: agent.Config{Controller: a},
	}
	res, err := lab.RunSessionContext(ctx, s)
	if err != nil {
		return MediaCell{}, err
	}
	k := res.Kernel
	if k == nil {
		return MediaCell{}, fmt.Errorf("session has no kernel result")
	}
	lat := res.Latencies(k.Warmup)
	slices.Sort(lat)
	c := MediaCell{
		Column: mc.col.Name, Transport: k.Transport, Controller: k.Controller,
		Competing:       mode.Competing,
		LatencyMedianMS: ms(quantile.Median(lat)), LatencyP95MS: ms(p95(lat)),
		Frames: len(res.Frames), Displayed: len(res.Displayed()),
		MediaGoodputBps: k.MediaGoodput, MediaUtilisation: k.MediaUtilisation,
		WindowSeconds: k.Window.Seconds(),
	}
	if f := k.Competing; f != nil {
		c.CompetingGoodputBps, c.CompetingShare = f.Goodput, f.Share
	}
	return c, nil
}

// p95 is the 95th percentile of sorted durations (nearest rank), 0 for
// none.
func p95(sorted []time.Duration) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return quantile.Nearest(sorted, 0.95)
}
