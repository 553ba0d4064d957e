package lab

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/screen"
	"github.com/nuvirahub/latencylab/internal/seeded"
	"github.com/nuvirahub/latencylab/lab/measure"
	"github.com/nuvirahub/latencylab/lab/plan"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/lab/traffic"
	"github.com/nuvirahub/latencylab/lab/transport"
	"github.com/nuvirahub/latencylab/netem/flows"
	"github.com/nuvirahub/latencylab/scenarios"
)

// home is a remote desktop on a home link, 20 Mbit/s down and 5 up, 15 ms
// each way, a 256 KB queue at each bottleneck, the ABR capped at
// 8 Mbit/s, with the given traffic.
func home(d time.Duration, traffic ...scenarios.Flow) *scenarios.Scenario {
	q := scenarios.Queue{Bytes: 256 << 10}
	return &scenarios.Scenario{Name: "home", Description: "a home link", Duration: d, Seed: 1,
		Network: scenarios.Network{
			Down: []scenarios.Phase{{Delay: 15 * ms, Rate: 20_000_000, Queue: q}},
			Up:   []scenarios.Phase{{Delay: 15 * ms, Rate: 5_000_000, Queue: q}},
		},
		Controller: scenarios.Controller{Kind: "abr", Max: 8_000_000},
		Agent:      budget,
		Traffic:    traffic,
	}
}

// flowMeasured is measure.OfWith for a flow measurement, failing the test
// on an error.
func flowMeasured(t *testing.T, r *result.Run, name, flow string, from, to time.Duration) float64 {
	t.Helper()
	v, err := measure.OfWith(r, name, from, to, measure.Params{Flow: flow})
	require.NoError(t, err, "%s of %s", name, flow)
	return v
}

// A download beside the session: from its start it takes most of the
// bottleneck, the session's video gets less, and the queue it keeps full
// raises the session's latency far above that of the same scenario
// without it.
func TestTrafficDownloadBesideTheSession(t *testing.T) {
	s := time.Second
	alone := runScenario(t, home(20*s))
	withDownload := runScenario(t, home(20*s, scenarios.Flow{Name: "download", Kind: "tcp-bulk", Start: 5 * s}))

	require.Nil(t, alone.Traffic)
	require.Len(t, withDownload.Traffic, 1)
	dl := withDownload.Traffic[0]
	require.Equal(t, "download", dl.Name)
	require.Equal(t, "down", dl.Direction)
	require.Equal(t, "TCP-like CUBIC", dl.Description)
	require.Equal(t, 5*s, dl.Start)
	require.Equal(t, 20*s, dl.Stop, "to the end")
	require.Len(t, dl.Delivered, 80, "a period of 250 ms each")
	for k, b := range dl.Delivered[:20] {
		require.Zero(t, b, "nothing before its start: period %d", k)
	}
	require.Empty(t, dl.Error)
	require.GreaterOrEqual(t, dl.SentBytes, dl.DeliveredBytes)

	share := flowMeasured(t, withDownload, "flow.share", "download", 8*s, 20*s)
	require.Greater(t, share, 0.5, "the download takes most of the link")
	require.Less(t, share, 0.97, "and leaves the session some")
	before := flowMeasured(t, withDownload, "flow.latency.median", "main", 0, 5*s)
	during := flowMeasured(t, withDownload, "flow.latency.median", "main", 8*s, 20*s)
	without := flowMeasured(t, alone, "flow.latency.median", "main", 8*s, 20*s)
	require.InDelta(t, flowMeasured(t, alone, "flow.latency.median", "main", 0, 5*s), before, 0.002, "the same session until the download starts")
	require.Greater(t, during-without, 0.050, "latency %.1f ms with the download, %.1f ms without", during*1000, without*1000)
	require.Less(t,
		flowMeasured(t, withDownload, "flow.throughput", "main", 8*s, 20*s),
		flowMeasured(t, alone, "flow.throughput", "main", 8*s, 20*s), "the video gets less of the link")
	t.Logf("download share %.2f; session latency %.1f ms before, %.1f ms during (%.1f ms without it)", share, before*1000, during*1000, without*1000)

	// The summary: main, then the download, each over its own time.
	require.Len(t, withDownload.Summary.Flows, 2)
	require.Equal(t, "main", withDownload.Summary.Flows[0].Name)
	require.NotNil(t, withDownload.Summary.Flows[0].Latency)
	require.Nil(t, withDownload.Summary.Flows[1].Latency, "a download has no latency")
	require.Nil(t, withDownload.Summary.Fairness, "no second session")
	require.Nil(t, alone.Summary.Flows)
}

// Each kind of flow does what it models: a cbr flow delivers its rate
// and stops at its stop, a web flow fetches the sizes its seeded source
// draws, a second session and reverse media display frames, the latter
// over the uplink, a bulk flow can go up, and an extra delay lengthens a
// flow's path.
func TestTrafficKinds(t *testing.T) {
	s := time.Second
	t.Run("cbr", func(t *testing.T) {
		r := runScenario(t, home(10*s, scenarios.Flow{Name: "voice", Kind: "cbr", Rate: 2_000_000, Start: 2 * s, Stop: 8 * s}))
		v := r.Traffic[0]
		require.InDelta(t, 2e6, flowMeasured(t, r, "flow.throughput", "voice", 3*s, 8*s), 0.005*2e6)
		require.Zero(t, flowMeasured(t, r, "flow.throughput", "voice", 8500*ms, 10*s), "stopped at 8 s")
		require.InDelta(t, 1250, v.Packets, 1, "6 s of 1200-byte datagrams at 2 Mbit/s")
		require.Equal(t, "2 Mbit/s in 1200-byte datagrams", v.Description)
		require.Less(t, v.Lost, int64(6), "the link has room: only those on their way at the stop (15 ms and the queue's wait)")
	})
	t.Run("web", func(t *testing.T) {
		f := scenarios.Flow{Name: "browsing", Kind: "web", Start: s, Think: 500 * ms}
		r := runScenario(t, home(15*s, f))
		w := r.Traffic[0]
		require.Greater(t, len(w.Objects), 10)
		// Every random choice from the scenario's seed and the flow's
		// place: the sizes are those drawn in turn with the think times.
		draws := seeded.New(1, "traffic", "0", "browsing", "web")
		cfg := flows.WebConfig{Think: 500 * ms}
		var done int64
		for i, o := range w.Objects {
			require.Equal(t, cfg.Size(draws), o.Bytes, "object %d", i)
			cfg.ThinkTime(draws)
			require.GreaterOrEqual(t, o.Start, s)
			if o.Done > 0 {
				done += o.Bytes
			}
		}
		require.GreaterOrEqual(t, w.DeliveredBytes, done)
		require.InDelta(t, float64(w.DeliveredBytes*8)/14, flowMeasured(t, r, "flow.throughput", "browsing", s, 15*s), 1e-6)
	})
	t.Run("session", func(t *testing.T) {
		r := runScenario(t, home(15*s, scenarios.Flow{Name: "colleague", Kind: "session", Controller: &scenarios.Controller{Kind: "gcc"}}))
		c := r.Traffic[0]
		require.Equal(t, "controller gcc", c.Description)
		displayed := 0
		for _, f := range c.Frames {
			if f.Displayed > 0 {
				displayed++
			}
		}
		require.Greater(t, displayed, 300, "frames displayed by the second viewer")
		lat := flowMeasured(t, r, "flow.latency.median", "colleague", 5*s, 15*s)
		require.Greater(t, lat, 0.030, "at least the 30 ms round trip's half and the pipeline")
		j := flowMeasured(t, r, "fairness.jain", "", 5*s, 15*s)
		require.Greater(t, j, 0.5)
		require.LessOrEqual(t, j, 1.0)
		require.NotNil(t, r.Summary.Fairness)
	})
	t.Run("reverse media", func(t *testing.T) {
		r := runScenario(t, home(10*s, scenarios.Flow{Name: "camera", Kind: "reverse-media",
			Controller: &scenarios.Controller{Kind: "fixed", Bitrate: 2_000_000}}))
		c := r.Traffic[0]
		require.Equal(t, "up", c.Direction)
		require.Greater(t, len(c.Frames), 300)
		// Its video crossed the uplink: 2 Mbit/s of it, more than the
		// session's acknowledgements and reports ever take.
		up := float64(r.Links.Up.DeliveredBytes*8) / 10
		require.Greater(t, up, 1.8e6, "uplink %.2f Mbit/s", up/1e6)
		require.InDelta(t, 0.4, flowMeasured(t, r, "flow.share", "camera", 2*s, 10*s), 0.04, "2 of the uplink's 5 Mbit/s")
		require.Greater(t, flowMeasured(t, r, "flow.latency.median", "camera", 2*s, 10*s), 0.015)
	})
	t.Run("bulk up", func(t *testing.T) {
		r := runScenario(t, home(10*s, scenarios.Flow{Name: "backup", Kind: "quic-bulk", Direction: "up"}))
		require.Equal(t, "up", r.Traffic[0].Direction)
		require.Greater(t, flowMeasured(t, r, "flow.share", "backup", 4*s, 10*s), 0.7, "it fills the uplink")
		require.Less(t, flowMeasured(t, r, "flow.share", "main", 4*s, 10*s), 0.5, "the video still has the downlink")
	})
	t.Run("pause and resume", func(t *testing.T) {
		// RFC 8867's pause and resume: a second session whose screen goes
		// still sends nothing new once its refinement passes are done
		// (15, 100 ms apart), then resumes when the screen changes again.
		r := runScenario(t, home(10*s, scenarios.Flow{Name: "paused", Kind: "session", Screen: []scenarios.ScreenPhase{
			{Source: "animation"}, {At: 3 * s, Source: "still"}, {At: 6 * s, Source: "animation"}}}))
		var paused, resumed int
		for _, f := range r.Traffic[0].Frames {
			switch {
			case f.Sent >= 5*s && f.Sent < 6*s:
				paused++
			case f.Displayed >= 6500*ms:
				resumed++
			}
		}
		require.Zero(t, paused, "nothing sent while the screen is still")
		require.Greater(t, resumed, 100, "frames displayed after the resume")
		require.Zero(t, flowMeasured(t, r, "flow.throughput", "paused", 5*s, 6*s))
	})
	t.Run("extra delay", func(t *testing.T) {
		// On a clean path, a second session 40 ms further away shows 40 ms
		// more latency than the first: its video crosses the extra delay
		// once.
		sc := home(10*s, scenarios.Flow{Name: "far", Kind: "session", Delay: 40 * ms})
		r := runScenario(t, sc)
		near := flowMeasured(t, r, "flow.latency.median", "main", 2*s, 10*s)
		far := flowMeasured(t, r, "flow.latency.median", "far", 2*s, 10*s)
		require.InDelta(t, 0.040, far-near, 0.008, "near %.1f ms, far %.1f ms", near*1000, far*1000)
		t.Logf("latency median: the scenario's session %.1f ms, the one 40 ms further away %.1f ms", near*1000, far*1000)
		require.Equal(t, "controller abr, 40ms more each way", r.Traffic[0].Description)
	})
}

// What cannot run is refused before anything runs: traffic with a path,
// bbr outside the kernel mode (in real time too).
func TestTrafficRefused(t *testing.T) {
	sc := home(5*time.Second, scenarios.Flow{Name: "d", Kind: "tcp-bulk"})
	p, err := plan.Convert(sc)
	require.NoError(t, err)
	path := sessionOf(p)
	path.Transport = transport.Topology{Connect: "relay"}
	_, err = RunSession(path)
	require.ErrorIs(t, err, ErrUnsupported)
	require.ErrorContains(t, err, "traffic in a session with a path")

	_, _, err = plan.Links(sc)
	require.ErrorIs(t, err, ErrUnsupported, "the proxy and the shell would run the network without the flows")

	bbr := home(5*time.Second, scenarios.Flow{Name: "d", Kind: "tcp-bulk", Congestion: "bbr"})
	p, err = plan.Convert(bbr)
	require.NoError(t, err)
	_, err = RunSession(sessionOf(p))
	require.ErrorIs(t, err, ErrUnsupported)
	require.ErrorContains(t, err, "congestion bbr needs the kernel's TCP")
	rt := sessionOf(p)
	rt.Transport = transport.RealTime{}
	_, err = RunSession(rt)
	require.ErrorIs(t, err, ErrUnsupported)
	require.ErrorContains(t, err, "congestion bbr needs the kernel's TCP")
}

// A scenario's flows become the session's: every key of every kind
// reaches the Flow that runs, and a session flow is built from the
// scenario's models with its own controller and screen.
func TestConvertTraffic(t *testing.T) {
	sc := home(20*time.Second,
		scenarios.Flow{Name: "d", Kind: "tcp-bulk", Start: time.Second, Stop: 9 * time.Second, Direction: "up", Delay: 5 * ms, Congestion: "reno"},
		scenarios.Flow{Name: "v", Kind: "cbr", Rate: 64_000, Size: 160},
		scenarios.Flow{Name: "w", Kind: "web", Object: &scenarios.ObjectSizes{Mean: 5000, SD: 100, Min: 10, Max: 9000}, Think: 2 * time.Second},
		scenarios.Flow{Name: "s", Kind: "session", Controller: &scenarios.Controller{Kind: "gcc", Max: 3_000_000},
			Screen: []scenarios.ScreenPhase{{Source: "typing"}}},
		scenarios.Flow{Name: "r", Kind: "reverse-media"},
	)
	p, err := plan.Convert(sc)
	require.NoError(t, err)
	fl := p.Traffic
	require.Len(t, fl, 5)
	require.Equal(t, traffic.Flow{Name: "d", Kind: traffic.KindTCPBulk, Start: time.Second, Stop: 9 * time.Second, Up: true, Delay: 5 * ms, Congestion: "reno"}, fl[0])
	require.Equal(t, traffic.Flow{Name: "v", Kind: traffic.KindCBR, Rate: 64_000, Size: 160}, fl[1])
	require.Equal(t, flows.WebConfig{Mean: 5000, SD: 100, Min: 10, Max: 9000, Think: 2 * time.Second}, fl[2].Web)
	require.Equal(t, "controller gcc", describeFlow(fl[3], false))
	require.NotSame(t, p.Agent.Controller, fl[4].Agent.Controller, "its own controller")
	require.Equal(t, "controller abr", describeFlow(fl[4], false), "the scenario's kind when it gives none")
	require.IsType(t, screen.Typing{}, fl[3].Screen.Timeline[0].Source, "its own screen")
	require.Nil(t, fl[4].Screen, "the scenario's: the documented animation")
	require.True(t, fl[4].DataUp())
	require.False(t, fl[3].DataUp())

	// The loader's defaults for a web flow's sizes are flows'.
	require.Equal(t, flows.WebConfig{}.WithDefaults().Min, int64(100))
	_, err = scenarios.Parse("f.yaml", []byte("name: t\ndescription: d\nduration: 20s\ntraffic: [{name: w, kind: web, object: {max: 99B}}]\n"), nil)
	require.ErrorContains(t, err, "100B is greater than max 99B", "the loader checks a max against flows' default min")
}

// An ECN-capable upload behind CoDel: its segments are marked, not
// dropped, and the result counts the marks on the flow and on the link.
func TestTrafficECNUploadIsMarked(t *testing.T) {
	s := time.Second
	sc := home(6*s, scenarios.Flow{Name: "upload", Kind: "tcp-bulk", Direction: "up", ECN: "classic", Start: s})
	sc.Network.Up[0].Queue.CoDel = true
	r := runScenario(t, sc)
	up := r.Traffic[0]
	t.Logf("upload: %d packets, %d lost, %d marked; uplink %d marked, drops %v", up.Packets, up.Lost, up.Marked, r.Links.Up.Marked, r.Links.Up.Dropped)
	require.Equal(t, "TCP-like CUBIC, ECN classic", up.Description)
	require.Positive(t, up.Marked)
	require.Zero(t, up.Lost)
	require.Equal(t, r.Links.Up.Marked, uint64(up.Marked), "only the upload is ECN-capable")
	// CoDel still drops the session's own packets on the uplink (its
	// QUIC is not ECN-capable), never the upload's.
}

// The library's upload twins, a bulk upload beside the session on a
// 16/1 Mbit/s line with a 500 ms uplink buffer: drop-tail keeps the
// session's latency above 200 ms for much of the time, FQ-CoDel on the
// uplink far less, and the upload keeps most of the uplink either way.
// docs/traffic.md quotes what it logs.
func TestTrafficUploadBesideSession(t *testing.T) {
	s := time.Second
	above := map[string]float64{}
	for _, name := range []string{"upload-beside-session-droptail", "upload-beside-session-fq-codel"} {
		r := runScenario(t, libraryScenario(t, name))
		a, err := measure.OfWith(r, "latency.time-above", 15*s, 30*s, measure.Params{Latency: 200 * ms})
		require.NoError(t, err)
		share := flowMeasured(t, r, "flow.share", "upload", 15*s, 30*s)
		t.Logf("%s: session's latency above 200 ms %.1f%% of the time, upload's share of the uplink %.1f%% (from 15 s)", name, a*100, share*100)
		require.Greater(t, share, 0.5, name)
		above[name] = a
	}
	require.Less(t, above["upload-beside-session-fq-codel"], above["upload-beside-session-droptail"]/2)
}

// The library's home-download twins, the same home link and download
// with drop-tail queues (home-download) or FQ-CoDel on both links
// (home-download-fq-codel), and the FQ-CoDel twin again with the CAKE-like
// queue as a home router sets it (dual-dsthost down, dual-srchost up).
// FQ-CoDel serves the video beside the download: the session's median
// latency falls from the drop-tail queue's to near the path's, and the
// two bulk flows share the downlink about half and half. The CAKE-like
// queue gives the same picture: both flows run between the same two
// hosts, so sharing between hosts first is sharing between flows.
// docs/traffic.md quotes what it logs.
func TestTrafficHomeDownloadTwins(t *testing.T) {
	s := time.Second
	cake := *libraryScenario(t, "home-download-fq-codel")
	cake.Name = "home-download (CAKE-like)"
	cake.Network.Down = slices.Clone(cake.Network.Down)
	cake.Network.Up = slices.Clone(cake.Network.Up)
	for _, d := range []struct {
		phases []scenarios.Phase
		mode   string
	}{{cake.Network.Down, "dual-dsthost"}, {cake.Network.Up, "dual-srchost"}} {
		for i := range d.phases {
			d.phases[i].Queue.FQCoDel, d.phases[i].Queue.Cake = false, d.mode
		}
	}
	type figures struct{ median, p95, share, video float64 }
	got := map[string]figures{}
	for _, sc := range []*scenarios.Scenario{libraryScenario(t, "home-download"), libraryScenario(t, "home-download-fq-codel"), &cake} {
		r := runScenario(t, sc)
		f := figures{
			median: flowMeasured(t, r, "flow.latency.median", scenarios.MainFlow, 15*s, 30*s),
			p95:    flowMeasured(t, r, "flow.latency.p95", scenarios.MainFlow, 15*s, 30*s),
			share:  flowMeasured(t, r, "flow.share", "download", 15*s, 30*s),
			video:  flowMeasured(t, r, "flow.throughput", scenarios.MainFlow, 15*s, 30*s),
		}
		t.Logf("%s: session's latency median %.1f ms, p95 %.1f ms; download's share %.1f%%; video %.2f Mbit/s (from 15 s); downlink drops %v",
			sc.Name, f.median*1000, f.p95*1000, f.share*100, f.video/1e6, r.Links.Down.Dropped)
		got[sc.Name] = f
	}
	tail, fq, ck := got["home-download"], got["home-download-fq-codel"], got[cake.Name]
	require.Less(t, fq.median, tail.median/2, "FQ-CoDel: no standing queue in front of the video")
	require.Greater(t, fq.video, 1.5*tail.video, "the video's turn is half the link")
	require.Less(t, fq.p95, tail.p95)
	require.Less(t, fq.share, tail.share)
	require.InDelta(t, 0.5, fq.share, 0.1, "two bulk flows, about half each")
	require.InEpsilon(t, fq.median, ck.median, 0.25, "the same two hosts: CAKE shares as FQ-CoDel")
	require.InDelta(t, fq.share, ck.share, 0.05)
}
