package sweep

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nuvirahub/latencylab/lab/sweep/grid"
	"github.com/nuvirahub/latencylab/reports/plots"
	"github.com/nuvirahub/latencylab/reports/render"
	"github.com/nuvirahub/latencylab/scenarios"
)

// Report files WriteReport writes into its folder.
const (
	// ReportBase is the report's name: sweep.md, sweep.html.
	ReportBase = "sweep"
	// TableFile is the table alone, in Markdown: the file to compare
	// between two runs of a grid, since the report also says how long
	// each took.
	TableFile = "sweep-table.md"
	// The Pareto plots, beside the report.
	BitratePlot = "sweep-pareto-bitrate.png"
	QualityPlot = "sweep-pareto-quality.png"
)

// fronts are the two trade-offs the sweep shows: latency (lower is
// better) against what the user gets for it (higher is better).
var fronts = []struct {
	measure, plot, title, axis, column string
}{
	{"bitrate.mean", BitratePlot, "Median latency against bitrate", "mean bitrate (Mbit/s, higher is better)", "bitrate"},
	{"quality.final", QualityPlot, "Median latency against quality", "final quality (0 to 1, higher is better)", "quality"},
}

// Fronts computes the Pareto fronts of the table: for each trade-off
// (latency.median against bitrate.mean, then against quality.final), the
// rows no other row beats on both (lower latency and higher bitrate, or
// quality), with their plot points. Rows missing either figure are left
// out.
func (t *Table) Fronts() (pts [][]plots.Point, front [][]int, rows [][]int) {
	for _, f := range fronts {
		var ps []plots.Point
		var rs []int
		for i, r := range t.Rows {
			x, okX := r.Values["latency.median"]
			y, okY := r.Values[f.measure]
			if !okX || !okY {
				continue
			}
			if f.measure == "bitrate.mean" {
				y /= 1e6
			}
			// The table's number, not the ID: a front of twenty IDs
			// would cover the plot; the caption and table give the IDs.
			ps = append(ps, plots.Point{X: x * 1e3, Y: y, Label: "#" + strconv.Itoa(r.Point.Index+1)})
			rs = append(rs, i)
		}
		pts = append(pts, ps)
		front = append(front, plots.ParetoFront(ps, true, false))
		rows = append(rows, rs)
	}
	return pts, front, rows
}

// onFront says, per row, which fronts it is on ("bitrate", "quality").
func (t *Table) onFront() []string {
	out := make([]string, len(t.Rows))
	_, front, rows := t.Fronts()
	for k, f := range fronts {
		for _, i := range front[k] {
			r := rows[k][i]
			if out[r] != "" {
				out[r] += ", "
			}
			out[r] += f.column
		}
	}
	return out
}

// num writes a figure with a fixed number of decimals, the same bits
// giving the same text on every machine.
func num(v float64, decimals int) string { return strconv.FormatFloat(v, 'f', decimals, 64) }

// MainTable is the sweep's table: a row per point in the grid's order,
// the varied parameters, the aggregates (Row.Values) and the fronts the
// point is on. It holds nothing about how the sweep ran (wall time,
// shards), so any sharding of a grid gives the same table.
func (t *Table) MainTable() render.Table {
	keys, _ := grid.Point{}.Params(t.Grid)
	header := append([]string{"#"}, keys...)
	header = append(header, "latency median (ms)", "latency p95 (ms)", "bitrate (Mbit/s)", "quality", "freezes", "Pareto front")
	front := t.onFront()
	tab := render.Table{
		Caption: fmt.Sprintf("Every point, over %s: the mean of the sessions' figures, freezes summed (n/a: see Missing figures).", t.sessionsPhrase()),
		Header:  header,
	}
	for i, r := range t.Rows {
		_, vals := r.Point.Params(t.Grid)
		row := append([]string{strconv.Itoa(r.Point.Index + 1)}, vals...)
		for _, c := range []struct {
			m     string
			scale float64
			dec   int
		}{{"latency.median", 1e3, 1}, {"latency.p95", 1e3, 1}, {"bitrate.mean", 1e-6, 2}, {"quality.final", 1, 3}, {"freezes", 1, 0}} {
			v, ok := r.Values[c.m]
			if !ok {
				row = append(row, "n/a")
				continue
			}
			row = append(row, num(v*c.scale, c.dec))
		}
		tab.Rows = append(tab.Rows, append(row, front[i]))
	}
	return tab
}

// sessionsPhrase says what each row sums up: "4 scenarios x 3 seeds".
func (t *Table) sessionsPhrase() string {
	s := plural(len(t.Grid.Scenarios), "scenario")
	if n := len(t.Grid.Seeds); n > 0 {
		s += " x " + plural(n, "seed")
	}
	return s
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// ScenarioTable is the per-scenario detail: per point, each scenario's
// median latency and mean bitrate, averaged over the seeds.
func (t *Table) ScenarioTable() render.Table {
	header := []string{"#"}
	var names []string
	if len(t.Rows) > 0 {
		for _, r := range t.Rows[0].Runs {
			if !slices.Contains(names, r.Scenario) {
				names = append(names, r.Scenario)
			}
		}
	}
	for _, n := range names {
		header = append(header, n+" latency (ms)", n+" bitrate (Mbit/s)")
	}
	tab := render.Table{Caption: "Per scenario: median latency and mean bitrate, the mean over the seeds.", Header: header}
	for _, r := range t.Rows {
		row := []string{strconv.Itoa(r.Point.Index + 1)}
		for _, n := range names {
			for _, c := range []struct {
				m     string
				scale float64
				dec   int
			}{{"latency.median", 1e3, 1}, {"bitrate.mean", 1e-6, 2}} {
				var sum float64
				count, ok := 0, true
				for _, run := range r.Runs {
					if run.Scenario != n {
						continue
					}
					v, has := run.Measures[c.m]
					ok = ok && has && run.Error == ""
					sum, count = sum+v, count+1
				}
				if !ok || count == 0 {
					row = append(row, "n/a")
					continue
				}
				row = append(row, num(sum/float64(count)*c.scale, c.dec))
			}
		}
		tab.Rows = append(tab.Rows, row)
	}
	return tab
}

// TableMarkdown is MainTable alone as a Markdown document: TableFile.
func (t *Table) TableMarkdown() string {
	return render.Markdown(&render.Doc{Title: "ABR sweep: " + t.gridPhrase(), Sections: []render.Section{{Tables: []render.Table{t.MainTable()}}}})
}

// gridPhrase sums the grid up in a line: "72 points over 4 scenarios x
// 3 seeds".
func (t *Table) gridPhrase() string {
	return fmt.Sprintf("%s over %s", plural(len(t.Rows), "point"), t.sessionsPhrase())
}

// axesPhrase lists the grid's axes: "threshold 30ms, 60ms; decrease 10%".
func (t *Table) axesPhrase() string {
	var parts []string
	g := &t.Grid
	for _, key := range grid.AxisKeys() {
		if vals := g.Values(key); len(vals) > 0 {
			parts = append(parts, key+" "+strings.Join(vals, ", "))
		}
	}
	if len(parts) == 0 {
		return "no parameter varied (each scenario's own ABR)"
	}
	return strings.Join(parts, "; ")
}

// Doc is the sweep's report: what was swept and how fast it ran, the
// Pareto plots, the table, the per-scenario detail and the figures that
// could not be taken.
func (t *Table) Doc() (*render.Doc, error) {
	seeds := "each scenario's own seed"
	if len(t.Grid.Seeds) > 0 {
		var ss []string
		for _, s := range t.Grid.Seeds {
			ss = append(ss, strconv.FormatUint(s, 10))
		}
		seeds = "seeds " + strings.Join(ss, ", ")
	}
	window := "after a warm-up of " + scenarios.FormatDuration(t.Grid.Warmup)
	if t.Grid.Duration > 0 {
		window += ", every scenario cut to " + scenarios.FormatDuration(t.Grid.Duration)
	}
	d := &render.Doc{
		Title: "ABR sweep: " + t.gridPhrase(),
		Intro: []string{
			fmt.Sprintf("The ABR (N10) with %s, on %s, %s: %d sessions. Measured %s: median and 95th percentile latency, mean encoded bitrate, quality of the last image displayed, freezes.",
				t.axesPhrase(), strings.Join(t.Grid.Scenarios, ", "), seeds, t.Sessions(), window),
			t.speedPhrase(),
		},
	}
	pts, front, rows := t.Fronts()
	sec := render.Section{
		Heading: "Pareto fronts",
		Paragraphs: []string{"A point is on a front when no other point has both a lower median latency and a higher bitrate (or final quality). " +
			"Latency and bitrate are means over the sessions; a session is one draw of its seed's losses and spikes" + t.variesPhrase() +
			", so a point near the front is as good as one on it unless several seeds agree."},
	}
	for k, f := range fronts {
		png, err := plots.Pareto(f.title, "median latency (ms, lower is better)", f.axis, pts[k], front[k])
		if err != nil {
			return nil, fmt.Errorf("sweep: %s plot: %w", f.column, err)
		}
		var on []string
		for _, i := range front[k] {
			on = append(on, pts[k][i].Label+" "+t.Rows[rows[k][i]].Point.ID)
		}
		sec.Figures = append(sec.Figures, render.Figure{Name: f.plot,
			Caption: fmt.Sprintf("%s; on the front: %s.", f.title, strings.Join(on, ", ")), PNG: png})
	}
	d.Sections = append(d.Sections, sec,
		render.Section{Heading: "All points", Tables: []render.Table{t.MainTable()}},
		render.Section{Heading: "By scenario", Tables: []render.Table{t.ScenarioTable()}})
	if miss := t.missingRows(); len(miss) > 0 {
		d.Sections = append(d.Sections, render.Section{Heading: "Missing figures",
			Paragraphs: []string{"Figures a point has no value for, and why (the first session that lacked it)."},
			Tables:     []render.Table{{Header: []string{"#", "point", "measurement", "why"}, Rows: miss}}})
	}
	return d, nil
}

// variesPhrase adds, for native sessions, that a session also varies from
// run to run.
func (t *Table) variesPhrase() string {
	if t.Exact {
		return ""
	}
	return " and, run natively, varies a little from run to run"
}

// speedPhrase says how the sweep ran: parts, wall time, speed.
func (t *Table) speedPhrase() string {
	wall, virtual := t.Wall(), t.Virtual()
	s := fmt.Sprintf("%.0f scenario seconds in %.1f wall seconds, %.0f scenario seconds per wall second",
		virtual.Seconds(), wall.Seconds(), t.Speed())
	how := "Sessions ran natively: a few can differ from run to run (lab/jobs, worker.go)."
	if t.Exact {
		how = "Sessions ran exact: each is a function of its scenario and seed, so any run or sharding of this grid gives this table (lab/exact)."
	}
	if len(t.Parts) == 1 {
		p := t.Parts[0]
		return fmt.Sprintf("Ran as one part, %d sessions at once: %s. %s", p.Parallel, s, how)
	}
	var each []string
	for _, p := range t.Parts {
		each = append(each, fmt.Sprintf("%s %s", p.Shard, p.Wall.Round(100*time.Millisecond)))
	}
	return fmt.Sprintf("Ran as %d parts (wall time %s): %s of machine time; %.1f s elapsed when the parts run at once. %s",
		len(t.Parts), strings.Join(each, ", "), s, t.Elapsed().Seconds(), how)
}

// missingRows lists the absent figures, row by row.
func (t *Table) missingRows() [][]string {
	var out [][]string
	for _, r := range t.Rows {
		for _, m := range Measures {
			if why, ok := r.Missing[m]; ok {
				out = append(out, []string{strconv.Itoa(r.Point.Index + 1), r.Point.ID, m, why})
			}
		}
	}
	return out
}

// WriteReport writes the report (ReportBase .md and .html, the Pareto
// plots) and TableFile into dir.
func WriteReport(dir string, t *Table) error {
	d, err := t.Doc()
	if err != nil {
		return err
	}
	if err := render.Write(dir, ReportBase, d); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, TableFile), []byte(t.TableMarkdown()), 0o644)
}
