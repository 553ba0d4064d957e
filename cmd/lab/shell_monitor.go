package main

import (
	"fmt"
	"io"
	"time"

	"github.com/nuvirahub/latencylab/lab/metrics"
	"github.com/nuvirahub/latencylab/netem"
)

// shellTick is how often the shell reads the links' counters while CMD
// runs: the metrics' sampling period. The status line is rewritten every
// shellStatusTicks of them (a second).
const (
	shellTick        = 250 * time.Millisecond
	shellStatusTicks = 4
)

// shellMonitor follows the links while CMD runs: at every tick it feeds
// what crossed since the last one to the metrics (when served), and at
// every shellStatusTicks-th it rewrites the status line (when shown).
type shellMonitor struct {
	// stats reads both links' counters since the start.
	stats func() (up, down netem.Stats)
	// epoch is the links' time zero, for the phases in force.
	epoch  time.Time
	phases shellPhases
	// m gets every tick's sample; nil when /metrics is not served.
	m *metrics.Metrics
	// status is where the status line goes; nil when it is not shown.
	// width says how wide it may be (0: unknown), read at each write: a
	// terminal may be resized while CMD runs.
	status io.Writer
	width  func() int

	ticks                int
	prevUp, prevDown     netem.Stats // at the last tick
	statusUp, statusDown netem.Stats // at the last status line
	statusAt             time.Time
	shown                bool // a status line is on the screen
}

// newShellMonitor starts following the links at now.
func newShellMonitor(stats func() (up, down netem.Stats), epoch time.Time, phases shellPhases,
	m *metrics.Metrics, status io.Writer, width func() int, now time.Time) *shellMonitor {
	mo := &shellMonitor{stats: stats, epoch: epoch, phases: phases, m: m, status: status, width: width}
	mo.prevUp, mo.prevDown = stats()
	mo.statusUp, mo.statusDown, mo.statusAt = mo.prevUp, mo.prevDown, now
	return mo
}

// tick reads the counters at now.
func (mo *shellMonitor) tick(now time.Time) {
	mo.ticks++
	up, down := mo.stats()
	if mo.m != nil {
		mo.m.Link(metrics.Up, metrics.LinkSampleOf(mo.prevUp, up))
		mo.m.Link(metrics.Down, metrics.LinkSampleOf(mo.prevDown, down))
	}
	mo.prevUp, mo.prevDown = up, down
	if mo.status == nil || mo.ticks%shellStatusTicks != 0 {
		return
	}
	line := shellStatus(now.Sub(mo.epoch), now.Sub(mo.statusAt), mo.statusUp, up, mo.statusDown, down, mo.phases)
	fmt.Fprintf(mo.status, "\r\033[K%s", fitWidth(line, mo.width()))
	mo.statusUp, mo.statusDown, mo.statusAt, mo.shown = up, down, now, true
}

// clear removes the status line, if one is shown, for the lines that
// follow CMD's end.
func (mo *shellMonitor) clear() {
	if mo.shown {
		fmt.Fprint(mo.status, "\r\033[K")
		mo.shown = false
	}
}
