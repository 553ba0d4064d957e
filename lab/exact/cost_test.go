package exact

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"testing/cryptotest"
	"testing/synctest"
	"time"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/nuvirahub/latencylab/internal/wire"
	"github.com/nuvirahub/latencylab/lab"
	"github.com/nuvirahub/latencylab/lab/estimate"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/scenarios"
)

// costModel measures how a session's cost grows and draws it; it runs only
// when asked, since its figures are the machine's:
//
//	go test ./lab/exact -run '^TestCostModel$' -costmodel -v -timeout 0
var costModel = flag.Bool("costmodel", false, "measure sessions' CPU against bitrate and length, fit lab/estimate's models and draw testdata/speed/cost-*.png (TestCostModel)")

// costPoint is one measured session.
type costPoint struct {
	mbps    int64
	length  time.Duration
	packets float64 // as the links counted them, both directions
	cpu     time.Duration
}

// TestCostModel runs the LAN animation at a fixed bitrate for several
// lengths, natively (in a bubble, on one P as the jobs' workers run) and
// exact, takes each session's CPU time (the process's, one session at a
// time), fits the three coefficients of lab/estimate's model to each by
// least squares, prints them beside the models' and draws the two plots
// of docs/performance.md. It asserts that each session carried the
// bitrate it is measured at (carriesBitrate) and that the fit explains the
// measurements within a factor of two, which a model of the wrong shape
// would not.
func TestCostModel(t *testing.T) {
	if !*costModel {
		t.Skip("run with -costmodel")
	}
	base := library(t, "lan-animation")
	rates := []int64{4, 16, 64}
	scenario := func(mbps int64, length time.Duration) *scenarios.Scenario {
		sc := *base
		sc.Duration, sc.Controller = length, scenarios.Controller{Kind: "fixed", Bitrate: mbps * 1_000_000}
		return &sc
	}

	var native []costPoint
	procs := runtime.GOMAXPROCS(1)
	for _, mbps := range rates {
		for _, length := range []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second} {
			sc := scenario(mbps, length)
			t.Run(fmt.Sprintf("native/%dMbps/%v", mbps, length), func(t *testing.T) {
				cryptotest.SetGlobalRandom(t, sc.Seed)
				var res *result.Run
				cpu0 := cpuTime(t)
				synctest.Test(t, func(t *testing.T) {
					var err error
					if res, err = lab.Run(t.Context(), sc); err != nil {
						t.Fatal(err)
					}
				})
				p := costPoint{mbps, length, float64(res.Links.Up.DeliveredPackets + res.Links.Down.DeliveredPackets), cpuTime(t) - cpu0}
				carriesBitrate(t, sc, res)
				t.Logf("native %d Mbit/s %v: %.0f packets, %v CPU", mbps, length, p.packets, p.cpu.Round(time.Millisecond))
				native = append(native, p)
			})
		}
	}
	runtime.GOMAXPROCS(procs)

	r := open(t)
	var exact []costPoint
	for _, mbps := range rates {
		for _, length := range []time.Duration{2 * time.Second, 5 * time.Second, 10 * time.Second} {
			sc := scenario(mbps, length)
			t.Run(fmt.Sprintf("exact/%dMbps/%v", mbps, length), func(t *testing.T) {
				cpu0 := cpuTime(t)
				res, err := r.Run(context.Background(), sc)
				if err == nil && res.Err != "" {
					err = errors.New(res.Err)
				}
				if err != nil {
					t.Fatal(err)
				}
				links := res.Result.Links
				p := costPoint{mbps, length, float64(links.Up.DeliveredPackets + links.Down.DeliveredPackets), cpuTime(t) - cpu0}
				carriesBitrate(t, sc, res.Result)
				t.Logf("exact %d Mbit/s %v: %.0f packets, %v CPU (%v wall)", mbps, length, p.packets, p.cpu.Round(time.Millisecond), res.Wall.Round(time.Millisecond))
				exact = append(exact, p)
			})
		}
	}
	if t.Failed() {
		return
	}

	fits := map[string]estimate.Model{}
	for _, set := range []struct {
		model  estimate.Model
		points []costPoint
	}{{estimate.Native, native}, {estimate.Exact, exact}} {
		fit := fitModel(t, set.model.Name, set.points)
		fits[fit.Name] = fit
		t.Logf("%s: fitted %v per session + %v per session second + %v per packet (the model in lab/estimate: %v + %v + %v)",
			fit.Name, fit.Fixed, fit.PerSecond, fit.PerPacket, set.model.Fixed, set.model.PerSecond, set.model.PerPacket)
		for _, p := range set.points {
			sc := scenario(p.mbps, p.length)
			predicted := fit.Session(sc)
			t.Logf("  %3d Mbit/s %5v: measured %8v, fit %8v, lab/estimate %8v (packets: %.0f measured, %.0f expected)",
				p.mbps, p.length, p.cpu.Round(time.Millisecond), predicted.Round(time.Millisecond), set.model.Session(sc).Round(time.Millisecond), p.packets, estimate.Packets(sc))
			if ratio := predicted.Seconds() / p.cpu.Seconds(); ratio < 0.5 || ratio > 2 {
				t.Errorf("%s %d Mbit/s %v: the fit says %v, measured %v", fit.Name, p.mbps, p.length, predicted, p.cpu)
			}
		}
	}

	dir := filepath.Join("..", "..", "testdata", "speed")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	byRate := func(p costPoint, length time.Duration) bool { return p.length == length }
	drawCost(t, filepath.Join(dir, "cost-bitrate.png"), "CPU per session against the video's bitrate",
		"bitrate (Mbit/s)", []costSeries{
			{"native, 20 s", filter(native, func(p costPoint) bool { return byRate(p, 20*time.Second) }), fits["native"], func(x float64) *scenarios.Scenario { return scenario(int64(x), 20*time.Second) }},
			{"exact, 10 s", filter(exact, func(p costPoint) bool { return byRate(p, 10*time.Second) }), fits["exact"], func(x float64) *scenarios.Scenario { return scenario(int64(x), 10*time.Second) }},
		}, func(p costPoint) float64 { return float64(p.mbps) })
	drawCost(t, filepath.Join(dir, "cost-length.png"), "CPU per session against its length, at 16 Mbit/s",
		"session length (s)", []costSeries{
			{"native", filter(native, func(p costPoint) bool { return p.mbps == 16 }), fits["native"], func(x float64) *scenarios.Scenario { return scenario(16, time.Duration(x*float64(time.Second))) }},
			{"exact", filter(exact, func(p costPoint) bool { return p.mbps == 16 }), fits["exact"], func(x float64) *scenarios.Scenario { return scenario(16, time.Duration(x*float64(time.Second))) }},
		}, func(p costPoint) float64 { return p.length.Seconds() })
}

// The QUIC packets of a session on the in-memory network: quic-go's
// initial size of 1280 bytes of UDP payload (path MTU discovery cannot grow
// it there), of which up to costQUICOverhead are not the stream's data:
// the short header (1, a 4-byte connection ID, up to 4 of packet number),
// the AEAD tag (16) and the STREAM frame's own (up to 9).
const (
	costQUICPacket   = 1280
	costQUICOverhead = 1 + 4 + 4 + 16 + 9
)

// carriesBitrate fails the test unless the session ran its whole length
// and its downlink carried its fixed bitrate within 10%: the bitrate's
// bytes over the session, with the lab's header on each frame (one a
// refresh) and each packet's overhead. The fit is of CPU against packets
// and seconds; a session that carried less than its bitrate (OpenH264's
// calibrated sizes send the animation at about 2 Mbit/s whatever the
// target) would put its points at the wrong bitrate on the plot.
func carriesBitrate(t *testing.T, sc *scenarios.Scenario, r *result.Run) {
	t.Helper()
	if r.Ran != sc.Duration || r.Interrupted != "" {
		t.Errorf("%s: ran %v of its %v (interrupted: %q)", sc.Name, r.Ran, sc.Duration, r.Interrupted)
	}
	bps, ran := float64(sc.Controller.Bitrate), r.Ran.Seconds()
	frames := ran * r.Refresh
	want := (bps/8*ran + frames*wire.FrameHeaderSize) * costQUICPacket / (costQUICPacket - costQUICOverhead)
	if got := float64(r.Links.Down.DeliveredBytes); math.Abs(got/want-1) > 0.1 {
		t.Errorf("%s: the downlink carried %.2f Mbit/s, want %.2f within 10%% (%.0f Mbit/s, a frame header a frame, a packet's overhead a packet)",
			sc.Name, got*8/ran/1e6, want*8/ran/1e6, bps/1e6)
	}
}

// fitModel fits Fixed, PerSecond and PerPacket to the points by least
// squares, on the packets the links counted. A coefficient the noise
// drives below zero is taken as zero.
func fitModel(t *testing.T, name string, points []costPoint) estimate.Model {
	t.Helper()
	a := mat.NewDense(len(points), 3, nil)
	b := mat.NewVecDense(len(points), nil)
	for i, p := range points {
		a.SetRow(i, []float64{1, p.length.Seconds(), p.packets})
		b.SetVec(i, p.cpu.Seconds())
	}
	var x mat.VecDense
	if err := x.SolveVec(a, b); err != nil {
		t.Fatalf("%s: fitting the model: %v", name, err)
	}
	d := func(s float64) time.Duration {
		return time.Duration(max(s, 0) * float64(time.Second)).Round(time.Microsecond / 10)
	}
	return estimate.Model{Name: name, Fixed: d(x.AtVec(0)).Round(time.Millisecond), PerSecond: d(x.AtVec(1)), PerPacket: d(x.AtVec(2))}
}

func filter(points []costPoint, keep func(costPoint) bool) []costPoint {
	return slices.DeleteFunc(slices.Clone(points), func(p costPoint) bool { return !keep(p) })
}

// costSeries is one way of running, measured and as its fit predicts.
type costSeries struct {
	name     string
	points   []costPoint
	fit      estimate.Model
	scenario func(x float64) *scenarios.Scenario
}

// drawCost draws measured CPU (points) and the fit (a line) against x, on
// a logarithmic CPU axis: exact and native differ tenfold.
func drawCost(t *testing.T, file, title, xLabel string, series []costSeries, x func(costPoint) float64) {
	t.Helper()
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = "CPU seconds per session (one core)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Top = true
	p.Legend.Left = true
	colours := []color.RGBA{{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, {R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}}
	for i, s := range series {
		pts := make(plotter.XYs, len(s.points))
		lo, hi := x(s.points[0]), x(s.points[0])
		for k, pt := range s.points {
			pts[k] = plotter.XY{X: x(pt), Y: pt.cpu.Seconds()}
			lo, hi = min(lo, x(pt)), max(hi, x(pt))
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			t.Fatal(err)
		}
		sc.Color = colours[i%len(colours)]
		sc.Shape = draw.CircleGlyph{}
		var line plotter.XYs
		for k := 0; k <= 50; k++ {
			xv := lo + (hi-lo)*float64(k)/50
			line = append(line, plotter.XY{X: xv, Y: s.fit.Session(s.scenario(xv)).Seconds()})
		}
		l, err := plotter.NewLine(line)
		if err != nil {
			t.Fatal(err)
		}
		l.Color = colours[i%len(colours)]
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		p.Add(sc, l)
		p.Legend.Add(s.name+" measured", sc)
		p.Legend.Add(s.name+" model", l)
	}
	if err := p.Save(16*vg.Centimeter, 10*vg.Centimeter, file); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", file)
}
