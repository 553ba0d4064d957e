package ccgrid

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/nuvirahub/latencylab/reports/render"
)

// MediaCell is what one media session measured: the lab's pipeline (agent
// with the ABR, viewer) across the kernel mode on one column, over one
// transport, alone or beside a competing long TCP flow.
type MediaCell struct {
	Column string `json:"column"`
	// Transport is "quic" (quic-go, NewReno) or "websocket" (the relay's
	// tunnel over kernel TCP with Controller).
	Transport string `json:"transport"`
	// Controller is the video's congestion controller as lab reported it
	// ("newreno (quic-go)", or the tunnel's TCP controller).
	Controller string `json:"controller"`
	// Competing is the competing long TCP flow's controller, "" alone.
	Competing string `json:"competing,omitempty"`
	// LatencyMedianMS and LatencyP95MS are the true capture-to-display
	// latency of the frames displayed, captured after the warm-up.
	LatencyMedianMS float64 `json:"latency_median_ms"`
	LatencyP95MS    float64 `json:"latency_p95_ms"`
	// Frames were captured, Displayed reached the screen (whole session).
	Frames    int `json:"frames"`
	Displayed int `json:"displayed"`
	// MediaGoodputBps is the encoded video that arrived in the window,
	// MediaUtilisation it over the downlink's rate (0 on a trace).
	MediaGoodputBps  float64 `json:"media_goodput_bps"`
	MediaUtilisation float64 `json:"media_utilisation"`
	// CompetingGoodputBps and CompetingShare are the competing flow's
	// goodput and its part of the two goodputs (the media's is the rest).
	CompetingGoodputBps float64 `json:"competing_goodput_bps,omitempty"`
	CompetingShare      float64 `json:"competing_share,omitempty"`
	// WindowSeconds is the measured window (after lab's warm-up).
	WindowSeconds float64 `json:"window_seconds"`
}

// Label names the session's transport and controller: "quic (newreno)",
// "websocket/bbr".
func (m MediaCell) Label() string {
	if m.Transport == "websocket" {
		return "websocket/" + m.Controller
	}
	return "quic (newreno)"
}

// mediaAlone are the sessions without a competing flow, competing the
// others, in the order they ran.
func (r *Report) mediaSplit() (alone, competing []MediaCell) {
	for _, m := range r.Media {
		if m.Competing == "" {
			alone = append(alone, m)
		} else {
			competing = append(competing, m)
		}
	}
	return alone, competing
}

// mediaLabels are the transports of the alone sessions, in run order.
func mediaLabels(ms []MediaCell) []string {
	var ls []string
	for _, m := range ms {
		if !slices.Contains(ls, m.Label()) {
			ls = append(ls, m.Label())
		}
	}
	return ls
}

// mediaColumns are the columns of the alone sessions, in run order.
func mediaColumns(ms []MediaCell) []string {
	var cs []string
	for _, m := range ms {
		if !slices.Contains(cs, m.Column) {
			cs = append(cs, m.Column)
		}
	}
	return cs
}

// MediaTables are the media sessions' tables: with the ABR on top, a row
// per transport/controller and a column per network condition for the
// latency and the media utilisation; then media against a competing flow,
// a row per competing controller. None without media.
func (r *Report) MediaTables() []render.Table {
	alone, comp := r.mediaSplit()
	var ts []render.Table
	if len(alone) > 0 {
		cols := mediaColumns(alone)
		for _, m := range []struct {
			caption string
			value   func(MediaCell) string
		}{
			{"Media with the ABR: capture-to-display latency, median / p95 (ms)", func(c MediaCell) string {
				return fmt.Sprintf("%.0f / %.0f", c.LatencyMedianMS, c.LatencyP95MS)
			}},
			{"Media with the ABR: media goodput (Mbit/s) and utilisation of the bottleneck (%)", func(c MediaCell) string {
				if c.MediaUtilisation == 0 {
					return fmt.Sprintf("%.2f", c.MediaGoodputBps/1e6) // a trace has no fixed rate
				}
				return fmt.Sprintf("%.2f (%.1f%%)", c.MediaGoodputBps/1e6, 100*c.MediaUtilisation)
			}},
		} {
			t := render.Table{Caption: m.caption, Header: append([]string{"transport"}, cols...)}
			for _, l := range mediaLabels(alone) {
				row := []string{l}
				for _, col := range cols {
					i := slices.IndexFunc(alone, func(c MediaCell) bool { return c.Label() == l && c.Column == col })
					if i < 0 {
						row = append(row, "—")
						continue
					}
					row = append(row, m.value(alone[i]))
				}
				t.Rows = append(t.Rows, row)
			}
			ts = append(ts, t)
		}
	}
	if len(comp) > 0 {
		t := render.Table{
			Caption: "Media (" + comp[0].Label() + ", ABR) beside one long TCP flow on " + comp[0].Column + ": goodputs and shares",
			Header:  []string{"competing flow", "media Mbit/s", "flow Mbit/s", "media share", "flow share", "media latency median / p95 (ms)"},
		}
		for _, c := range comp {
			t.Rows = append(t.Rows, []string{c.Competing,
				fmt.Sprintf("%.2f", c.MediaGoodputBps/1e6), fmt.Sprintf("%.2f", c.CompetingGoodputBps/1e6),
				fmt.Sprintf("%.0f%%", 100*(1-c.CompetingShare)), fmt.Sprintf("%.0f%%", 100*c.CompetingShare),
				fmt.Sprintf("%.0f / %.0f", c.LatencyMedianMS, c.LatencyP95MS)})
		}
		ts = append(ts, t)
	}
	return ts
}

// mediaSection is the report's media section, nil without media.
func (r *Report) mediaSection() (*render.Section, error) {
	if len(r.Media) == 0 {
		return nil, nil
	}
	figs, err := r.MediaFigures()
	if err != nil {
		return nil, err
	}
	s := &render.Section{Heading: "Media with the ABR on top", Paragraphs: []string{
		"Each session is the lab's whole pipeline (agent with the ABR controller, viewer, default screen) run with lab.RunSession across the kernel mode, in real time: the agent's sockets in namespace A, the viewer's in B, the column's impairments on both links (the downlink carries the video). QUIC goes straight over UDP with quic-go's NewReno; the WebSocket transport carries the same QUIC packets through the relay's tunnel over kernel TCP with the named controller, which then paces the video. Latency is the true capture-to-display latency of the frames captured after lab's warm-up (a quarter of the session, at most 2 s); utilisation is the encoded video that arrived in the window over the downlink's rate.",
		"Against a competing flow, QUIC media shares N11's link with one long TCP flow (like iperf3) from A to B that starts after the handshake; each one's share is its goodput over the two together, over the same window.",
	}, Tables: r.MediaTables(), Figures: figs}
	if r.Grid.Media != nil {
		s.Paragraphs = append(s.Paragraphs, fmt.Sprintf("Sessions of %g s, seed %d.", r.Grid.Media.Seconds, r.Grid.Seed))
	}
	return s, nil
}

// MediaFigures draws the median latency per transport/controller (bars
// grouped by column) and the competing sessions' shares (stacked bars);
// each only when the run has its sessions.
func (r *Report) MediaFigures() ([]render.Figure, error) {
	alone, comp := r.mediaSplit()
	var figs []render.Figure
	if len(alone) > 0 {
		png, err := latencyBars(alone)
		if err != nil {
			return nil, fmt.Errorf("ccgrid: latency plot: %w", err)
		}
		figs = append(figs, render.Figure{Name: "ccgrid-media-latency.png",
			Caption: "Median capture-to-display latency with the ABR on top, per transport/controller; a group per network condition.", PNG: png})
	}
	if len(comp) > 0 {
		png, err := shareBars(comp)
		if err != nil {
			return nil, fmt.Errorf("ccgrid: share plot: %w", err)
		}
		figs = append(figs, render.Figure{Name: "ccgrid-media-shares.png",
			Caption: "Media and one competing long TCP flow on " + comp[0].Column + ": each one's share of their goodput, per competing controller.", PNG: png})
	}
	return figs, nil
}

// latencyBars draws a bar per transport/controller, grouped by column.
func latencyBars(ms []MediaCell) ([]byte, error) {
	labels, cols := mediaLabels(ms), mediaColumns(ms)
	p := newBarPlot("median capture-to-display latency (ms)", cols)
	w := vg.Points(float64(60 / max(len(labels), 1)))
	legend := plot.NewLegend()
	for li, l := range labels {
		vs := make(plotter.Values, len(cols))
		for ci, col := range cols {
			i := slices.IndexFunc(ms, func(c MediaCell) bool { return c.Label() == l && c.Column == col })
			if i >= 0 {
				vs[ci] = ms[i].LatencyMedianMS
			}
		}
		b, err := plotter.NewBarChart(vs, w)
		if err != nil {
			return nil, err
		}
		b.Color, b.LineStyle.Width = palette[li%len(palette)], 0
		b.Offset = w * vg.Length(float64(li)-float64(len(labels)-1)/2)
		p.Add(b)
		legend.Add(l, b)
	}
	// Headroom over the tallest bar, which would touch the frame.
	p.Y.Max *= 1.08
	return drawBars(p, legend, len(cols))
}

// shareBars stacks the media's share under the competing flow's, a bar
// per competing controller.
func shareBars(ms []MediaCell) ([]byte, error) {
	var names []string
	media, flow := make(plotter.Values, len(ms)), make(plotter.Values, len(ms))
	for i, m := range ms {
		names = append(names, m.Competing+" flow")
		flow[i] = 100 * m.CompetingShare
		media[i] = 100 - flow[i]
	}
	p := newBarPlot("share of the two goodputs (%)", names)
	p.Y.Max = 100
	w := vg.Points(40)
	mb, err := plotter.NewBarChart(media, w)
	if err != nil {
		return nil, err
	}
	fb, err := plotter.NewBarChart(flow, w)
	if err != nil {
		return nil, err
	}
	mb.Color, fb.Color = palette[0], palette[7]
	mb.LineStyle.Width, fb.LineStyle.Width = 0, 0
	fb.StackOn(mb)
	p.Add(mb, fb)
	legend := plot.NewLegend()
	legend.Add("media, "+ms[0].Transport, mb)
	legend.Add("competing TCP flow", fb)
	return drawBars(p, legend, len(names))
}

// newBarPlot is a plot with a category axis of names.
func newBarPlot(ylabel string, names []string) *plot.Plot {
	p := plot.New()
	p.Y.Label.Text = ylabel
	p.Y.Min = 0
	p.NominalX(names...)
	// NominalX sets ±0.5 around the bars; a little more keeps the
	// outer groups' bars off the frame.
	p.X.Min, p.X.Max = -0.6, float64(len(names))-0.4
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size = vg.Points(10)
		a.Tick.Label.Font.Size = vg.Points(9)
	}
	g := plotter.NewGrid()
	g.Vertical.Color, g.Horizontal.Color = color.Transparent, color.Gray{Y: 0xe4}
	p.Add(g)
	return p
}

// drawBars renders a bar plot with its legend in a strip on the right,
// as the measure plots are laid out.
func drawBars(p *plot.Plot, legend plot.Legend, groups int) ([]byte, error) {
	if math.IsInf(p.Y.Max, 0) || p.Y.Max <= 0 {
		p.Y.Max = 1
	}
	legend.TextStyle.Font.Size = vg.Points(9)
	legend.Top, legend.Left = true, true
	w := panelW*vg.Length(max(1, (groups+1)/2)) + stripW + 2*vg.Centimeter
	img := vgimg.NewWith(vgimg.UseWH(w, plotH), vgimg.UseDPI(dpi), vgimg.UseBackgroundColor(color.White))
	dc := draw.New(img)
	const margin = 2 * vg.Millimeter
	area := draw.Crop(dc, margin, -stripW-2*vg.Centimeter, margin, -margin)
	p.Draw(area)
	data := p.DataCanvas(area)
	legend.Draw(draw.Canvas{Canvas: dc.Canvas, Rectangle: vg.Rectangle{
		Min: vg.Point{X: area.Max.X + 3*vg.Millimeter, Y: data.Min.Y},
		Max: vg.Point{X: dc.Max.X - margin, Y: data.Max.Y},
	}})
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("encoding PNG: %w", err)
	}
	return buf.Bytes(), nil
}
