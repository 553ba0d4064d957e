package ccgrid

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nuvirahub/latencylab/reports/render"
)

// Schema names the JSON's format; a change that breaks readers bumps it.
// v2 added the QUIC row (Grid.QUIC) and the media sessions (Grid.Media,
// Report.Media), both optional, so a v1 file still reads: ReadReport
// takes SchemaV1 as a v2 report without them.
const Schema = "latencylab.ccgrid/v2"

// SchemaV1 is the bulk-only format before the QUIC row and the media.
const SchemaV1 = "latencylab.ccgrid/v1"

// Files WriteReport writes into its folder.
const (
	// JSONFile is the whole run, the source of every other file (lab
	// ccgrid -from re-renders from it).
	JSONFile = "ccgrid.json"
	// ReportBase names report.md and report.html.
	ReportBase = "report"
	// TableFile is the tables alone, the file to compare between runs.
	TableFile = "ccgrid-table.md"
)

// Cell is what one bulk flow measured: one controller on one column.
type Cell struct {
	Controller string `json:"controller"`
	Column     string `json:"column"`
	// GoodputBps is TCP payload per second over the measured window (the
	// flow after its warm-up, see kernel.Bulk).
	GoodputBps float64 `json:"goodput_bps"`
	// CapacityBps is what the A-to-B bottleneck offered in that window:
	// the rate, or for a trace its delivery opportunities in the window.
	CapacityBps float64 `json:"capacity_bps"`
	// Utilisation is GoodputBps over CapacityBps. Headers cost about 3.5%
	// of a 1500-byte packet, so a full link reads about 0.965.
	Utilisation float64 `json:"utilisation"`
	// QueueDelayMeanMS is the mean time the flow's packets waited in the
	// A-to-B bottleneck queue during the window, as the link itself
	// counted it (netem Stats.Queued): the queueing delay the controller
	// causes, without TCP's estimate in between. QueueDelayMaxMS is the
	// longest wait over the whole flow, slow start included.
	QueueDelayMeanMS float64 `json:"queue_delay_mean_ms"`
	QueueDelayMaxMS  float64 `json:"queue_delay_max_ms"`
	// SRTTMS and MinRTTMS are the sender's smoothed RTT at the end and the
	// smallest it saw, BaseRTTMS twice the column's one-way delay; SRTT
	// minus BaseRTT is TCP's view of the queueing delay, a cross-check of
	// the link's.
	SRTTMS    float64 `json:"srtt_ms"`
	MinRTTMS  float64 `json:"min_rtt_ms"`
	BaseRTTMS float64 `json:"base_rtt_ms"`
	// Retransmits and Segments are the sender's tcpi_total_retrans and
	// tcpi_segs_out over the whole flow; RetransPercent is their ratio.
	// For the QUIC row they are quic-go's PacketsLost and PacketsSent:
	// QUIC resends a lost packet's frames in new packets, so its lost
	// packets are what it retransmitted.
	Retransmits    uint32  `json:"retransmits"`
	Segments       uint32  `json:"segments"`
	RetransPercent float64 `json:"retrans_percent"`
	// Drops counts the A-to-B link's drops per reason over the whole flow
	// ("loss": the column's random loss; "queue": a full queue).
	Drops map[string]uint64 `json:"drops,omitempty"`
	// WindowSeconds is the measured window's length.
	WindowSeconds float64 `json:"window_seconds"`
}

// Report is a run of the grid.
type Report struct {
	Schema  string    `json:"schema"`
	Started time.Time `json:"started"`
	// WallSeconds is the whole run's wall time, pairs' setup included.
	WallSeconds float64 `json:"wall_seconds"`
	// Machine and Kernel say where it ran: the kernel's controllers are
	// the ones compared, so its release matters.
	Machine string `json:"machine"`
	Kernel  string `json:"kernel"`
	Grid    Grid   `json:"grid"`
	// Cells in the order they ran: column by column, every controller of
	// a column one after another. A run stopped early has fewer.
	Cells []Cell `json:"cells"`
	// Media are the media sessions of Grid.Media, in the order they ran.
	Media []MediaCell `json:"media,omitempty"`
	// Incomplete says why a run stopped before its last cell.
	Incomplete string `json:"incomplete,omitempty"`
}

// Cell returns the cell of a controller and a column.
func (r *Report) Cell(controller, column string) (Cell, bool) {
	for _, c := range r.Cells {
		if c.Controller == controller && c.Column == column {
			return c, true
		}
	}
	return Cell{}, false
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// ReadReport reads a report's JSON, refusing another schema, unknown
// fields (a file of another tool) and cells outside its grid.
func ReadReport(path string) (*Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	dec.DisallowUnknownFields()
	var r Report
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("ccgrid: %s: %w", path, err)
	}
	switch r.Schema {
	case Schema:
	case SchemaV1:
		// A v1 run has neither the QUIC row nor media: it is a v2 report
		// without them, and is written back as v2.
		r.Schema = Schema
	default:
		return nil, fmt.Errorf("ccgrid: %s: schema %q, want %q (or %q)", path, r.Schema, Schema, SchemaV1)
	}
	if err := r.Grid.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, c := range r.Cells {
		if !r.hasColumn(c.Column) || !r.hasController(c.Controller) {
			return nil, fmt.Errorf("ccgrid: %s: cell %s on %q is not in the grid", path, c.Controller, c.Column)
		}
	}
	return &r, nil
}

func (r *Report) hasColumn(name string) bool {
	for _, c := range r.Grid.Columns {
		if c.Name == name {
			return true
		}
	}
	return false
}

func (r *Report) hasController(name string) bool {
	for _, c := range r.Grid.Rows() {
		if c == name {
			return true
		}
	}
	return false
}

// N11 is finding N11 read off the grid: at 25 ms, 1% loss, 5 Mbit/s, the
// utilisation of each controller (QUICRow's too when it ran), and whether
// the classic ones (cubic, reno) stay under half of the link while BBR
// does not.
type N11 struct {
	Column string
	// Utilisation per controller that ran on the column.
	Utilisation map[string]float64
	// ClassicUnderHalf: cubic and reno both ran and both stayed under
	// 0.5. BBRNot: bbr ran and reached 0.5 or more. Reproduced: both.
	ClassicUnderHalf, BBRNot, Reproduced bool
}

// ErrNoN11 is N11's error when the run has no N11 column, or none of its
// cells.
var ErrNoN11 = errors.New("ccgrid: the run has no cell of N11's link (25 ms, 1%, 5 Mbit/s, 1000 packets)")

// N11 finds finding N11's column and reads its verdict.
func (r *Report) N11() (N11, error) {
	for _, col := range r.Grid.Columns {
		if !col.IsN11() {
			continue
		}
		n := N11{Column: col.Name, Utilisation: map[string]float64{}}
		for _, cc := range r.Grid.Rows() {
			if c, ok := r.Cell(cc, col.Name); ok {
				n.Utilisation[cc] = c.Utilisation
			}
		}
		if len(n.Utilisation) == 0 {
			return n, ErrNoN11
		}
		cubic, okC := n.Utilisation["cubic"]
		reno, okR := n.Utilisation["reno"]
		bbr, okB := n.Utilisation["bbr"]
		n.ClassicUnderHalf = okC && okR && cubic < 0.5 && reno < 0.5
		n.BBRNot = okB && bbr >= 0.5
		n.Reproduced = n.ClassicUnderHalf && n.BBRNot
		return n, nil
	}
	return N11{}, ErrNoN11
}

// Sentence states the N11 verdict in one paragraph; rows are the
// table's (Grid.Rows), QUIC's named with its controller.
func (n N11) Sentence(rows []string) string {
	var parts []string
	for _, cc := range rows {
		if u, ok := n.Utilisation[cc]; ok {
			name := cc
			if cc == QUICRow {
				name = "QUIC (NewReno, quic-go)"
			}
			parts = append(parts, fmt.Sprintf("%s %.1f%%", name, 100*u))
		}
	}
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	verdict := "**not reproduced**"
	if n.Reproduced {
		verdict = "**reproduced**"
	}
	return fmt.Sprintf("N11 (%s, 5 Mbit/s, 1000-packet queue): utilisation %s. CUBIC and Reno under half: %s; BBR not: %s. N11 %s.",
		n.Column, strings.Join(parts, ", "), yes(n.ClassicUnderHalf), yes(n.BBRNot), verdict)
}

// Measure is one figure of a cell, as the tables and plots show it.
type Measure struct {
	// Key names the measure in file names ("utilisation").
	Key string
	// Title heads its table and plot, Unit labels its axis.
	Title, Unit string
	// Value reads it off a cell; Format writes it in a table cell.
	Value  func(Cell) float64
	Format func(float64) string
}

// Measures are the tables, in order: utilisation first (N11's measure),
// then what the controllers pay for it.
var Measures = []Measure{
	{Key: "utilisation", Title: "Utilisation (goodput / bottleneck capacity)", Unit: "%",
		Value: func(c Cell) float64 { return 100 * c.Utilisation }, Format: fixed(1)},
	{Key: "goodput", Title: "Goodput", Unit: "Mbit/s",
		Value: func(c Cell) float64 { return c.GoodputBps / 1e6 }, Format: fixed(2)},
	{Key: "queueing", Title: "Queueing delay (mean wait in the bottleneck queue, measured at the link)", Unit: "ms",
		Value: func(c Cell) float64 { return c.QueueDelayMeanMS }, Format: fixed(0)},
	{Key: "retransmissions", Title: "Retransmissions (share of the segments sent)", Unit: "%",
		Value: func(c Cell) float64 { return c.RetransPercent }, Format: fixed(2)},
}

func fixed(decimals int) func(float64) string {
	return func(v float64) string {
		if math.IsNaN(v) {
			return "—"
		}
		return fmt.Sprintf("%.*f", decimals, v)
	}
}

// Table is one measure as a table: a row per controller, a column per
// network condition, "—" where no cell ran.
func (r *Report) Table(m Measure) render.Table {
	t := render.Table{Caption: m.Title + " (" + m.Unit + ")", Header: []string{"controller"}}
	for _, col := range r.Grid.Columns {
		t.Header = append(t.Header, col.Name)
	}
	for _, cc := range r.Grid.Rows() {
		row := []string{cc}
		for _, col := range r.Grid.Columns {
			v := math.NaN()
			if c, ok := r.Cell(cc, col.Name); ok {
				v = m.Value(c)
			}
			row = append(row, m.Format(v))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// Tables are every measure's table, in Measures' order.
func (r *Report) Tables() []render.Table {
	var ts []render.Table
	for _, m := range Measures {
		ts = append(ts, r.Table(m))
	}
	return ts
}

// TableMarkdown is the tables alone as Markdown (TableFile), with the N11
// sentence when the run has its cells.
func (r *Report) TableMarkdown() string {
	var paras []string
	if n, err := r.N11(); err == nil {
		paras = append(paras, n.Sentence(r.Grid.Rows()))
	}
	return render.Markdown(&render.Doc{Sections: []render.Section{{Paragraphs: paras, Tables: append(r.Tables(), r.MediaTables()...)}}})
}

// Doc is the report: the N11 verdict, the method, the tables and the
// plots. It fails only when a plot cannot be drawn.
func (r *Report) Doc() (*render.Doc, error) {
	d := &render.Doc{Title: "Congestion controllers on the lab's links"}
	d.Intro = append(d.Intro, fmt.Sprintf(
		"%d rows (%s) × %d network conditions, one bulk flow (like iperf3; TCP, or QUIC for the quic row) of %g s per cell, one cell at a time, through netem's kernel mode (two network namespaces joined by netem links). Started %s on %s, kernel %s; %s wall.",
		len(r.Grid.Rows()), strings.Join(r.Grid.Rows(), ", "), len(r.Grid.Columns), r.Grid.Seconds,
		r.Started.UTC().Format(time.RFC3339), r.Machine, r.Kernel, time.Duration(r.WallSeconds*float64(time.Second)).Round(time.Second).String()))
	if r.Incomplete != "" {
		d.Intro = append(d.Intro, fmt.Sprintf("**Incomplete run**: %d of %d cells (%s).", len(r.Cells), r.Grid.Cells(), r.Incomplete))
	}
	if n, err := r.N11(); err == nil {
		d.Sections = append(d.Sections, render.Section{Heading: "Finding N11", Paragraphs: []string{
			n.Sentence(r.Grid.Rows()),
			"The write-up: with random losses NewReno and Cubic read every loss as congestion and used less than half of the bandwidth; BBR did not.",
		}})
	}
	d.Sections = append(d.Sections, render.Section{Heading: "Method", Paragraphs: []string{
		fmt.Sprintf("Each cell gets a fresh pair of namespaces, so no cell inherits another's TCP metrics cache (a cached ssthresh would change the next flow's slow start). Both directions carry the column's impairments: a bottleneck, then random loss, then the one-way delay; the loss columns are 5 Mbit/s with a 1000-packet queue (tc netem's default limit), and the 25 ms, 1%% column is exactly netem.DocumentedBadLink. Every cell's links use seed %d, so in a column all controllers meet the same losses.", r.Grid.Seed),
		"The quic row is a QUIC bulk flow (quic-go, whose controller is NewReno and cannot be swapped) between UDP sockets made inside the two namespaces, on the same links and seed, measured over the same window; its retransmissions are the packets quic-go declared lost over those it sent, since QUIC resends a lost packet's frames in new packets.",
		"Goodput is counted by the receiver after a warm-up (the first quarter of the flow, at most 2 s), as iperf3 -O does. Utilisation is goodput over the bottleneck's capacity: the rate, or for the trace column the trace's delivery opportunities within the measured window (mahimahi's 1504 bytes each). A full link reads about 96.5%, the rest being TCP/IP headers. Goodput is what the application read, so data held out of order behind a loss at the window's start counts inside it: a deep-buffered flow can read a few % over the link (up to one congestion window over the window's length; longer flows shrink it).",
		"Queueing delay is measured at the link: the mean time the flow's data packets waited in the A-to-B bottleneck queue during the measured window (netem's Stats.Queued), not TCP's smoothed RTT; the JSON has both (srtt_ms minus base_rtt_ms is TCP's view). Retransmissions are tcpi_total_retrans over tcpi_segs_out for the whole flow.",
		fmt.Sprintf("The cellular column plays %s from A to B (the flow's direction) and %s back, with the network of scenario cellular-steady: 40 ms each way, a buffer of 500 ms.", CellularDown, CellularUp),
	}})
	d.Sections = append(d.Sections, render.Section{Heading: "Tables", Tables: r.Tables()})
	figs, err := r.Figures()
	if err != nil {
		return nil, err
	}
	d.Sections = append(d.Sections, render.Section{Heading: "Plots", Paragraphs: []string{
		"Each measure against the loss rate, one line per controller, one panel per one-way delay. The loss axis is evenly spaced by column, not to scale; the cellular column is in the tables only, having no loss rate of its own."},
		Figures: figs})
	if ms, err := r.mediaSection(); err != nil {
		return nil, err
	} else if ms != nil {
		d.Sections = append(d.Sections, *ms)
	}
	return d, nil
}

// WriteReport writes JSONFile, TableFile, report.md, report.html and the
// plots into dir.
func WriteReport(dir string, r *Report) error {
	d, err := r.Doc()
	if err != nil {
		return err
	}
	if err := render.Write(dir, ReportBase, d); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, TableFile), []byte(r.TableMarkdown()), 0o644); err != nil {
		return err
	}
	return r.WriteJSON(filepath.Join(dir, JSONFile))
}

// Merge adds the bulk cells of an earlier run that r lacks, so that a
// short run (the N11 column and the trace) and a whole grid make one
// report. The earlier run must have the same controllers, flow length and
// seed, or its cells would not compare; its columns and QUIC row join r's
// grid in its order, and its media sessions are dropped for r's.
func (r *Report) Merge(earlier *Report) error {
	e := earlier.Grid
	if !slices.Equal(e.Controllers, r.Grid.Controllers) || e.Seconds != r.Grid.Seconds || e.Seed != r.Grid.Seed {
		return fmt.Errorf("ccgrid: merge: the earlier run's grid (%v, %g s, seed %d) differs from this one's (%v, %g s, seed %d)",
			e.Controllers, e.Seconds, e.Seed, r.Grid.Controllers, r.Grid.Seconds, r.Grid.Seed)
	}
	// The earlier grid's order, then any column only this run has.
	merged := slices.Clone(e.Columns)
	for _, c := range r.Grid.Columns {
		if !slices.ContainsFunc(merged, func(m Column) bool { return m.Name == c.Name }) {
			merged = append(merged, c)
		}
	}
	r.Grid.Columns = merged
	for _, c := range earlier.Cells {
		if _, ok := r.Cell(c.Controller, c.Column); !ok {
			r.Cells = append(r.Cells, c)
		}
	}
	return r.Grid.Validate()
}
