// Package ccgrid owns the congestion-controller comparison (finding
// N11): a grid of TCP controllers (bbr, cubic, reno) against
// network conditions (random loss 0 to 5% at 25 and 100 ms one way and
// 5 Mbit/s, and a cellular trace), each cell one bulk TCP flow through
// netem's kernel mode, and its report: a table per measure, JSON, plots
// and the N11 verdict (at 25 ms, 1% loss, 5 Mbit/s, do CUBIC and Reno use
// under half of the link while BBR does not?).
//
// The definition, the tables, the JSON and the plots are portable and need
// no privilege; only Run needs Linux, root and /dev/net/tun (see
// netem/kernel).
package ccgrid

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nuvirahub/latencylab/netem"
)

// The grid's defaults: the comparison's losses and delays around the
// write-up's bad link
// (netem.DocumentedBadLink).
const (
	// DefaultDuration is each cell's flow length: long enough that the
	// measured window (after kernel.MaxWarmup) holds several of a classic
	// controller's saw-teeth at 100 ms.
	DefaultDuration = 10 * time.Second
	// DefaultSeed seeds every cell's links, the same seed as the kernel
	// package's N11 test, so every controller meets the same losses in a
	// column and the N11 cell is that test's link.
	DefaultSeed = 11
	// Rate and QueuePackets are the bottleneck of every loss column: the
	// write-up's 5 Mbit/s, and tc netem's default limit.
	Rate         = 5_000_000
	QueuePackets = 1000
)

// Default controllers, losses (percent) and one-way delays (ms).
var (
	DefaultControllers = []string{"bbr", "cubic", "reno"}
	DefaultLosses      = []float64{0, 0.5, 1, 2, 5}
	DefaultDelays      = []float64{25, 100}
)

// The cellular column: the lab's own LTE-like trace, with the network of
// scenario cellular-steady (40 ms each way, a buffer of 500 ms). Paths are
// relative to the module's root.
const (
	CellularName      = "cellular-steady"
	CellularDown      = "testdata/traces/cellular-steady.down"
	CellularUp        = "testdata/traces/cellular-steady.up"
	cellularDelayMS   = 40
	cellularQueueMSec = 500
)

// Column is one network condition: a column of the tables. Both
// directions get the same impairments, except that a trace column plays
// TraceDown from A to B (the bulk flow's direction, as a download) and
// TraceUp back. Units are in the field names, so the JSON reads alone.
type Column struct {
	// Name heads the column ("25 ms, 1%", "cellular-steady").
	Name string `json:"name"`
	// DelayMS is the one-way delay of each direction: the base RTT is
	// twice it.
	DelayMS float64 `json:"delay_ms"`
	// LossPercent is the random (Bernoulli) loss of each direction.
	LossPercent float64 `json:"loss_percent"`
	// RateBps and QueuePackets are the bottleneck of a fixed-rate column.
	RateBps      int64 `json:"rate_bps,omitempty"`
	QueuePackets int   `json:"queue_packets,omitempty"`
	// TraceDown and TraceUp are the mahimahi traces of a trace column
	// (relative paths resolve against Run's root), QueueDelayMS its
	// buffer, sized in time as mobile networks size theirs.
	TraceDown    string  `json:"trace_down,omitempty"`
	TraceUp      string  `json:"trace_up,omitempty"`
	QueueDelayMS float64 `json:"queue_delay_ms,omitempty"`
}

// IsTrace reports whether the column's capacity is a trace.
func (c Column) IsTrace() bool { return c.TraceDown != "" }

// Delay is the one-way delay.
func (c Column) Delay() time.Duration { return msDuration(c.DelayMS) }

// BaseRTT is the round trip with empty queues: twice the one-way delay.
func (c Column) BaseRTT() time.Duration { return 2 * c.Delay() }

// IsN11 reports whether the column is finding N11's link: 25 ms one way,
// 1% loss, 5 Mbit/s, a 1000-packet queue (netem.DocumentedBadLink).
func (c Column) IsN11() bool {
	return !c.IsTrace() && c.DelayMS == 25 && c.LossPercent == 1 && c.RateBps == Rate && c.QueuePackets == QueuePackets
}

// Validate refuses a column that cannot make a link.
func (c Column) Validate() error {
	var errs []error
	if c.Name == "" {
		errs = append(errs, errors.New("no name"))
	}
	if c.DelayMS < 0 {
		errs = append(errs, fmt.Errorf("delay %g ms is negative", c.DelayMS))
	}
	if c.LossPercent < 0 || c.LossPercent >= 100 {
		errs = append(errs, fmt.Errorf("loss %g%% outside [0, 100)", c.LossPercent))
	}
	switch {
	case c.IsTrace() && (c.TraceUp == "" || c.RateBps != 0):
		errs = append(errs, errors.New("a trace column needs trace_down and trace_up and no rate"))
	case !c.IsTrace() && c.RateBps <= 0:
		errs = append(errs, errors.New("no bottleneck: set rate_bps or a trace"))
	}
	if c.QueuePackets < 0 || c.QueueDelayMS < 0 {
		errs = append(errs, errors.New("negative queue limit"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("column %q: %w", c.Name, err)
	}
	return nil
}

// Impairments returns fresh impairments for one direction (down: A to B,
// the flow's data; otherwise B to A, its ACKs), with traces loaded from
// root. The order is DocumentedBadLink's: the bottleneck queue, then the
// loss, then the delay, so that the N11 column is exactly that link.
func (c Column) Impairments(root string, down bool) ([]netem.Impairment, error) {
	var imps []netem.Impairment
	if c.IsTrace() {
		path := c.TraceUp
		if down {
			path = c.TraceDown
		}
		tr, err := netem.LoadTrace(resolve(root, path))
		if err != nil {
			return nil, err
		}
		imps = append(imps, &netem.TraceLink{Trace: tr, Queue: netem.QueueLimit{
			Packets: c.QueuePackets, Delay: msDuration(c.QueueDelayMS)}})
	} else {
		imps = append(imps, &netem.Rate{Rate: c.RateBps, Queue: netem.QueueLimit{Packets: c.QueuePackets}})
	}
	if c.LossPercent > 0 {
		imps = append(imps, &netem.Loss{Probability: c.LossPercent / 100})
	}
	if c.DelayMS > 0 {
		imps = append(imps, &netem.Delay{Delay: c.Delay()})
	}
	return imps, nil
}

// resolve makes a relative path relative to root.
func resolve(root, path string) string {
	if filepath.IsAbs(path) || root == "" {
		return path
	}
	return filepath.Join(root, path)
}

// msDuration converts milliseconds, possibly fractional.
func msDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// QUICRow names the QUIC bulk row of the tables: quic-go's NewReno, which
// cannot be swapped from outside its module, beside the kernel's TCP controllers.
const QUICRow = "quic"

// Grid is the comparison: every controller on every column, each cell one
// bulk flow of Duration, then the media sessions of Media.
type Grid struct {
	Controllers []string `json:"controllers"`
	// QUIC adds the QUICRow: a QUIC bulk flow per column.
	QUIC    bool     `json:"quic,omitempty"`
	Columns []Column `json:"columns"`
	// Seconds is each flow's length (see kernel.Bulk).
	Seconds float64 `json:"seconds"`
	// Seed seeds every cell's links: all controllers of a column meet the
	// same random losses.
	Seed uint64 `json:"seed"`
	// Media, when set, runs lab sessions with the ABR on top after the
	// bulk cells.
	Media *MediaPlan `json:"media,omitempty"`
}

// MediaPlan is the media part of the comparison: a lab session (agent,
// ABR, viewer) across the kernel mode per transport on each of Columns,
// and QUIC media beside one long TCP flow of each Competing controller on
// the N11 column.
type MediaPlan struct {
	// Columns names grid columns to run the sessions on.
	Columns []string `json:"columns"`
	// Controllers are the WebSocket tunnel's TCP controllers; QUIC
	// (NewReno) always runs too.
	Controllers []string `json:"controllers"`
	// Competing are the controllers of the long TCP flow beside QUIC
	// media on the N11 column; none: no competing sessions.
	Competing []string `json:"competing,omitempty"`
	// Seconds is each session's length after the handshake.
	Seconds float64 `json:"seconds"`
}

// DefaultMediaSeconds is a media session's length: short, since the
// ABR settles within seconds and the grid runs a dozen of them.
const DefaultMediaSeconds = 10

// DefaultMediaPlan runs the media on N11's link and the cellular trace,
// the tunnel over every default controller and every one competing.
func DefaultMediaPlan() *MediaPlan {
	return &MediaPlan{
		Columns:     []string{LossColumnName(25, 1), CellularName},
		Controllers: slices.Clone(DefaultControllers),
		Competing:   slices.Clone(DefaultControllers),
		Seconds:     DefaultMediaSeconds,
	}
}

// Duration is each media session's length.
func (m MediaPlan) Duration() time.Duration { return time.Duration(m.Seconds * float64(time.Second)) }

// Sessions is the number of media sessions the plan runs.
func (m MediaPlan) Sessions() int { return len(m.Columns)*(1+len(m.Controllers)) + len(m.Competing) }

// DefaultGrid is the comparison's grid: DefaultControllers on every loss of
// DefaultLosses at each of DefaultDelays (5 Mbit/s, 1000 packets), then
// the cellular column; DefaultDuration per cell.
func DefaultGrid() Grid {
	g := Grid{Controllers: slices.Clone(DefaultControllers), QUIC: true, Seconds: DefaultDuration.Seconds(), Seed: DefaultSeed,
		Media: DefaultMediaPlan()}
	for _, d := range DefaultDelays {
		for _, l := range DefaultLosses {
			g.Columns = append(g.Columns, Column{
				Name:    LossColumnName(d, l),
				DelayMS: d, LossPercent: l, RateBps: Rate, QueuePackets: QueuePackets,
			})
		}
	}
	g.Columns = append(g.Columns, Column{
		Name: CellularName, DelayMS: cellularDelayMS, TraceDown: CellularDown, TraceUp: CellularUp,
		QueueDelayMS: cellularQueueMSec,
	})
	return g
}

// LossColumnName names a fixed-rate column: "25 ms, 0.5%".
func LossColumnName(delayMS, lossPercent float64) string {
	return strconv.FormatFloat(delayMS, 'f', -1, 64) + " ms, " + strconv.FormatFloat(lossPercent, 'f', -1, 64) + "%"
}

// Duration is each cell's flow length.
func (g Grid) Duration() time.Duration { return time.Duration(g.Seconds * float64(time.Second)) }

// Rows are the tables' rows: the TCP controllers, then QUICRow when the
// grid has it.
func (g Grid) Rows() []string {
	rows := slices.Clone(g.Controllers)
	if g.QUIC {
		rows = append(rows, QUICRow)
	}
	return rows
}

// Cells is the number of bulk flows the grid runs.
func (g Grid) Cells() int { return len(g.Rows()) * len(g.Columns) }

// N11Only keeps the N11 column and the trace columns, for a short run.
func (g *Grid) N11Only() {
	g.Columns = slices.DeleteFunc(g.Columns, func(c Column) bool { return !c.IsN11() && !c.IsTrace() })
}

// Validate refuses an empty grid, a repeated controller or column name,
// bad columns and a flow too short to measure after its warm-up.
func (g Grid) Validate() error {
	var errs []error
	if len(g.Controllers) == 0 {
		errs = append(errs, errors.New("no controller"))
	}
	if len(g.Columns) == 0 {
		errs = append(errs, errors.New("no column"))
	}
	seen := map[string]bool{}
	for _, c := range g.Controllers {
		if seen["cc:"+c] {
			errs = append(errs, fmt.Errorf("controller %q given twice", c))
		}
		seen["cc:"+c] = true
	}
	if g.QUIC && seen["cc:"+QUICRow] {
		errs = append(errs, fmt.Errorf("controller %q clashes with the QUIC row", QUICRow))
	}
	for _, c := range g.Columns {
		if err := c.Validate(); err != nil {
			errs = append(errs, err)
		}
		if seen["col:"+c.Name] {
			errs = append(errs, fmt.Errorf("column %q given twice", c.Name))
		}
		seen["col:"+c.Name] = true
	}
	// Below a second the warm-up (a quarter) leaves too few round trips
	// at 100 ms to say anything about a controller.
	if g.Seconds < 1 {
		errs = append(errs, fmt.Errorf("flows of %g s are too short: at least 1 s", g.Seconds))
	}
	if m := g.Media; m != nil {
		for _, name := range m.Columns {
			if !seen["col:"+name] {
				errs = append(errs, fmt.Errorf("media column %q is not in the grid", name))
			}
		}
		if len(m.Competing) > 0 && !slices.ContainsFunc(g.Columns, Column.IsN11) {
			errs = append(errs, errors.New("competing media sessions need the N11 column"))
		}
		// The ABR judges its reports over seconds; under 3 s the
		// session is mostly its start.
		if m.Seconds < 3 {
			errs = append(errs, fmt.Errorf("media sessions of %g s are too short: at least 3 s", m.Seconds))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("ccgrid: %w", err)
	}
	return nil
}

// ParseControllers reads a comma-separated list of TCP congestion
// controller names ("bbr,cubic,reno"), as TCP_CONGESTION takes them:
// lower-case letters, digits, '_' and '-'; spaces around names are
// ignored, an empty or repeated name is an error. Whether the kernel has
// them is kernel.ControllerAvailable's question, asked when the grid runs.
func ParseControllers(s string) ([]string, error) {
	var out []string
	for name := range strings.SplitSeq(s, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			return nil, fmt.Errorf("ccgrid: controllers %q: empty name (want e.g. bbr,cubic,reno)", s)
		}
		// TCP_CONGESTION_NAME_MAX is 16 bytes with its NUL.
		if len(name) > 15 || strings.ContainsFunc(name, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-')
		}) {
			return nil, fmt.Errorf("ccgrid: controller %q is not a TCP_CONGESTION name (lower-case, at most 15 characters)", name)
		}
		if slices.Contains(out, name) {
			return nil, fmt.Errorf("ccgrid: controller %q given twice", name)
		}
		out = append(out, name)
	}
	return out, nil
}
