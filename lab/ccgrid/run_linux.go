//go:build linux

package ccgrid

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/netem/kernel"
)

// Check reports why the grid cannot run here: kernel mode unavailable (not
// root, no /dev/net/tun, no ip command) or a controller the kernel lacks.
// The errors wrap kernel.ErrUnavailable.
func Check(g Grid) error {
	if err := kernel.Available(); err != nil {
		return err
	}
	ccs := slices.Clone(g.Controllers)
	if m := g.Media; m != nil {
		ccs = append(append(ccs, m.Controllers...), m.Competing...)
	}
	for _, cc := range ccs {
		if err := kernel.ControllerAvailable(cc); err != nil {
			return err
		}
	}
	return nil
}

// Run runs the grid's cells one at a time, column by column, each on a
// fresh pair of namespaces, and writes a progress line per cell to
// progress (nil: none). Relative trace paths resolve against root (the
// module's root). On an error or when ctx ends, it returns the cells done
// so far in the report (Incomplete says why) with the error.
//
// One cell at a time: the links run in real time on the machine's cores,
// and two flows at once would compete for them as well as skew each
// other's timing.
func Run(ctx context.Context, g Grid, root string, progress io.Writer) (*Report, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	if err := Check(g); err != nil {
		return nil, err
	}
	if progress == nil {
		progress = io.Discard
	}
	// Load every trace once: a bad path fails before the first flow, not
	// minutes into the run.
	traces := map[string]*netem.Trace{}
	for _, col := range g.Columns {
		if !col.IsTrace() {
			continue
		}
		for _, path := range []string{col.TraceDown, col.TraceUp} {
			tr, err := netem.LoadTrace(resolve(root, path))
			if err != nil {
				return nil, fmt.Errorf("ccgrid: column %q: %w", col.Name, err)
			}
			traces[path] = tr
		}
	}
	rep := &Report{
		Schema: Schema, Started: time.Now(), Grid: g,
		Machine: fmt.Sprintf("%s/%s, %d CPUs, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version()),
		Kernel:  kernelRelease(),
	}
	start := time.Now()
	total := g.Cells()
	for _, col := range g.Columns {
		for _, cc := range g.Rows() {
			// A stopped run makes no pair for a cell it would abandon.
			err := ctx.Err()
			var c Cell
			if err == nil {
				if cc == QUICRow {
					c, err = runQUICCell(ctx, g, col, root, traces)
				} else {
					c, err = runCell(ctx, g, col, cc, root, traces)
				}
			}
			rep.WallSeconds = time.Since(start).Seconds()
			if err != nil {
				rep.Incomplete = fmt.Sprintf("stopped at %s on %s: %v", cc, col.Name, err)
				return rep, fmt.Errorf("ccgrid: %s on %s: %w", cc, col.Name, err)
			}
			rep.Cells = append(rep.Cells, c)
			done := len(rep.Cells)
			left := time.Duration(float64(time.Since(start)) / float64(done) * float64(total-done))
			fmt.Fprintf(progress, "[%2d/%d] %-6s %-16s util %5.1f%%  queue %5.0f ms  retrans %5.2f%%   %4.0f s so far, about %s left\n",
				done, total, cc, col.Name, 100*c.Utilisation, c.QueueDelayMeanMS, c.RetransPercent,
				time.Since(start).Seconds(), left.Round(time.Second))
		}
	}
	if g.Media != nil {
		if err := runMedia(ctx, g, root, rep, start, progress); err != nil {
			rep.WallSeconds = time.Since(start).Seconds()
			return rep, err
		}
	}
	rep.WallSeconds = time.Since(start).Seconds()
	return rep, nil
}

// runCell runs one bulk flow on a fresh pair: a fresh pair because a
// namespace keeps a TCP metrics cache per destination, and a flow that
// inherits the previous one's ssthresh starts differently.
func runCell(ctx context.Context, g Grid, col Column, cc, root string, traces map[string]*netem.Trace) (Cell, error) {
	p, epoch, err := newPair(g, col, root)
	if err != nil {
		return Cell{}, err
	}
	defer p.Close()

	d := g.Duration()
	// The link's window should match Bulk's, which starts after the
	// handshake: one base RTT after the call, give or take the
	// namespace switches (well under a millisecond).
	warm := min(kernel.MaxWarmup, d/4) + col.BaseRTT()
	snap := make(chan netem.Stats, 1)
	timer := time.AfterFunc(warm, func() {
		ab, _ := p.Stats()
		snap <- ab
	})
	res, err := kernel.Bulk(ctx, p, cc, d)
	end := time.Now()
	ab1, _ := p.Stats()
	// A timer that never fired (a flow that failed early) leaves the
	// zero counters: the whole flow.
	var s0 netem.Stats
	if !timer.Stop() {
		s0 = <-snap
	}
	if err != nil {
		return Cell{}, err
	}

	c := Cell{
		Controller: res.Controller, Column: col.Name,
		GoodputBps:    res.Goodput,
		SRTTMS:        ms(res.RTT),
		MinRTTMS:      ms(res.MinRTT),
		BaseRTTMS:     ms(col.BaseRTT()),
		Retransmits:   res.Retransmits,
		Segments:      res.SegmentsOut,
		WindowSeconds: res.Window.Seconds(),
	}
	if res.SegmentsOut > 0 {
		c.RetransPercent = 100 * float64(res.Retransmits) / float64(res.SegmentsOut)
	}
	if col.IsTrace() {
		// Bulk's own window, which goodput counts over: it ends as
		// Bulk returns (closing costs microseconds), so it is the last
		// res.Window before end. The trace's capacity swings within a
		// second; the link snapshot's window, off by a handshake, would
		// compare goodput with the wrong stretch of it.
		c.CapacityBps = traceCapacity(traces[col.TraceDown], end.Sub(epoch)-res.Window, end.Sub(epoch))
	} else {
		c.CapacityBps = float64(res.Rate)
	}
	if c.CapacityBps > 0 {
		c.Utilisation = c.GoodputBps / c.CapacityBps
	}
	if n := ab1.Queued.Packets - s0.Queued.Packets; n > 0 {
		c.QueueDelayMeanMS = ms((ab1.Queued.Total - s0.Queued.Total) / time.Duration(n))
	}
	c.QueueDelayMaxMS = ms(ab1.Queued.Max)
	for reason, n := range ab1.Dropped {
		if c.Drops == nil {
			c.Drops = map[string]uint64{}
		}
		c.Drops[string(reason)] = n.Packets
	}
	return c, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// traceCapacity is what a trace offers between two instants after its
// link's epoch, in bit/s: TraceMTU bytes per delivery opportunity, the
// trace repeating every period. The cellular trace fades every ~20 s, so
// its average over the whole period would misjudge a 10 s flow.
func traceCapacity(tr *netem.Trace, from, to time.Duration) float64 {
	if tr == nil || to <= from {
		return 0
	}
	var buf bytes.Buffer
	if _, err := tr.WriteTo(&buf); err != nil {
		return 0
	}
	period := tr.Period()
	var n int64
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		v, err := strconv.ParseInt(sc.Text(), 10, 64)
		if err != nil {
			return 0 // WriteTo writes only numbers
		}
		at := time.Duration(v) * time.Millisecond
		// Count this opportunity in every repetition that falls in
		// [from, to).
		k0 := (from - at + period - 1) / period // first repetition at or after from
		if from <= at {
			k0 = 0
		}
		for t := at + k0*period; t < to; t += period {
			if t >= from {
				n++
			}
		}
	}
	return float64(n) * netem.TraceMTU * 8 / (to - from).Seconds()
}

// kernelRelease is the running kernel's release, the version of the
// controllers compared.
func kernelRelease() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

// newPair makes a cell's pair of namespaces: the column's impairments A to
// B (the data's direction) and back, both links counting from the epoch it
// returns, so that a trace's position in the measured window is known (see
// traceCapacity).
func newPair(g Grid, col Column, root string) (*kernel.Pair, time.Time, error) {
	down, err := col.Impairments(root, true)
	if err != nil {
		return nil, time.Time{}, err
	}
	up, err := col.Impairments(root, false)
	if err != nil {
		return nil, time.Time{}, err
	}
	epoch := time.Now()
	p, err := kernel.New(kernel.Config{
		AtoB: netem.LinkConfig{Seed: g.Seed, Epoch: epoch, Impairments: down},
		BtoA: netem.LinkConfig{Seed: g.Seed, Epoch: epoch, Impairments: up},
	})
	return p, epoch, err
}
