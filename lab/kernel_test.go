//go:build linux

package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent"
	"github.com/nuvirahub/latencylab/agent/abr"
	"github.com/nuvirahub/latencylab/internal/quantile"
	"github.com/nuvirahub/latencylab/internal/timerprobe"
	"github.com/nuvirahub/latencylab/lab/traffic"
	"github.com/nuvirahub/latencylab/lab/transport"
	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/netem/kernel"
)

// requireKernel skips the test, saying why, where kernel mode or one of
// the controllers cannot run; with LAB_REQUIRE_KERNEL=1 (CI as root) that
// is a failure instead, so that a broken runner cannot pass by skipping.
func requireKernel(t *testing.T, controllers ...string) {
	t.Helper()
	err := kernel.Available()
	for _, c := range controllers {
		if err == nil {
			err = kernel.ControllerAvailable(c)
		}
	}
	if err == nil {
		return
	}
	if os.Getenv("LAB_REQUIRE_KERNEL") == "1" {
		t.Fatalf("LAB_REQUIRE_KERNEL=1 but %v", err)
	}
	t.Skipf("skipping: %v (set LAB_REQUIRE_KERNEL=1 to make this a failure)", err)
}

// badLinkSession is a session on the write-up's bad link both ways (N9:
// 25 ms, 1% loss, 5 Mbit/s) in kernel mode.
func badLinkSession(d time.Duration, mode transport.Kernel) Session {
	return Session{
		Seed: 1, Duration: d,
		Uplink: netem.DocumentedBadLink(), Downlink: netem.DocumentedBadLink(),
		Transport: mode,
	}
}

// runKernel runs a kernel-mode session and checks what every one must
// show: frames displayed, both links busy, the namespaces gone after.
func runKernel(t *testing.T, s Session) *Result {
	t.Helper()
	res, err := RunSession(s)
	require.NoError(t, err)
	require.NotNil(t, res.Kernel)
	require.NotEmpty(t, res.Displayed())
	require.Positive(t, res.Downlink.Delivered.Packets)
	require.Positive(t, res.Uplink.Delivered.Packets)
	require.Positive(t, res.Kernel.MediaGoodput)
	base, _, _ := strings.Cut(res.Kernel.Pair, " ")
	for _, side := range []string{"-a", "-b"} {
		require.NoFileExists(t, filepath.Join("/run/netns", base+side))
	}
	return res
}

// QUIC between a UDP socket in the agent's namespace and one in the
// viewer's, across the kernel links: the pipeline runs as in virtual
// time, and the links count the kernel's IP packets.
func TestKernelSessionQUIC(t *testing.T) {
	requireKernel(t)
	res := runKernel(t, badLinkSession(3*time.Second, transport.Kernel{}))
	require.Equal(t, transport.KernelQUIC, res.Kernel.Transport)
	require.Equal(t, "newreno (quic-go)", res.Kernel.Controller)
	require.Nil(t, res.Kernel.Tunnel)
	require.Equal(t, int64(5_000_000), res.Kernel.Rate)
	// 1% loss on a few hundred packets: the link's loss did its part.
	require.Positive(t, res.Downlink.Dropped[netem.DropLoss].Packets)
}

// The same session through the relay and a WebSocket over kernel TCP with
// CUBIC: the kernel confirms the controller on the tunnel's sender, which
// carried the video.
func TestKernelSessionWebSocket(t *testing.T) {
	requireKernel(t, "cubic")
	res := runKernel(t, badLinkSession(3*time.Second, transport.Kernel{Transport: transport.KernelWebSocket, Controller: "cubic"}))
	require.Equal(t, "cubic", res.Kernel.Controller)
	require.NotNil(t, res.Kernel.Tunnel)
	require.Positive(t, res.Kernel.Tunnel.SegmentsOut)
	require.Positive(t, res.Kernel.Tunnel.MinRTT)
}

// Media beside one long TCP flow on the same bottleneck: both get bytes
// through, and their shares add up to the whole of the two.
func TestKernelSessionCompeting(t *testing.T) {
	requireKernel(t, "cubic")
	res := runKernel(t, badLinkSession(4*time.Second, transport.Kernel{Competing: "cubic"}))
	c := res.Kernel.Competing
	require.NotNil(t, c)
	require.Equal(t, "cubic", c.Controller)
	require.Positive(t, c.Goodput)
	require.Positive(t, c.Sender.SegmentsOut)
	require.InDelta(t, 1, c.Share+res.Kernel.MediaGoodput/(res.Kernel.MediaGoodput+c.Goodput), 1e-9)
	t.Logf("media %.2f Mbit/s, competing cubic %.2f Mbit/s (share %.0f%%)", res.Kernel.MediaGoodput/1e6, c.Goodput/1e6, 100*c.Share)
}

// A tcp-bulk flow of the traffic runs over the kernel's own TCP with its
// controller, from its start to its stop, beside the session, in either
// direction: its receiver's bytes are counted by period as in virtual
// time, and the kernel confirms its controller.
func TestKernelTraffic(t *testing.T) {
	requireKernel(t, "cubic", "reno", "bbr")
	// One-sided bounds on goodput: 20 ms.
	timerprobe.Require(t, 20*time.Millisecond)
	link := func() []netem.Impairment { // an instance belongs to one link
		return []netem.Impairment{&netem.Rate{Rate: 10_000_000, Queue: netem.QueueLimit{Packets: 100}}, &netem.Delay{Delay: 10 * time.Millisecond}}
	}
	s := Session{Seed: 1, Duration: 5 * time.Second, Uplink: link(), Downlink: link(), Transport: transport.Kernel{},
		SampleEvery: 250 * time.Millisecond,
		Traffic: []traffic.Flow{
			{Name: "download", Kind: traffic.KindTCPBulk, Congestion: "bbr", Start: time.Second, Stop: 4 * time.Second},
			{Name: "upload", Kind: traffic.KindTCPBulk, Congestion: "reno", Up: true, Start: 2 * time.Second},
		}}
	res := runKernel(t, s)
	require.Len(t, res.Traffic, 2)
	for _, fr := range res.Traffic {
		require.NoError(t, fr.Err, fr.Flow.Name)
		require.Positive(t, fr.Stats.Delivered, fr.Flow.Name)
		require.GreaterOrEqual(t, fr.Stats.Sent, fr.Stats.Delivered, fr.Flow.Name)
		require.Positive(t, fr.Stats.Packets, "%s: the kernel's segments out", fr.Flow.Name)
		var total int64
		for _, b := range fr.Delivered {
			total += b
		}
		require.Equal(t, fr.Stats.Delivered, total, fr.Flow.Name)
	}
	dl := res.Traffic[0]
	for k, b := range dl.Delivered[:4] {
		require.Zero(t, b, "before its start at 1 s: period %d", k)
	}
	// From 2 s to 4 s the download shares the downlink with the 4 Mbit/s
	// video, its acknowledgements the uplink with the upload's queue.
	var mid int64
	for _, b := range dl.Delivered[8:16] {
		mid += b
	}
	require.Greater(t, float64(mid*8)/2, 2e6, "the download's goodput in [2 s, 4 s)")
	require.Equal(t, 4*time.Second, dl.Flow.Stop)
	require.Equal(t, 5*time.Second, res.Traffic[1].Flow.Stop, "to the end")
	require.Equal(t, "kernel TCP bbr", describeFlow(dl.Flow, true))
	t.Logf("download (bbr) %.2f Mbit/s in [2 s, 4 s); upload (reno) %d bytes", float64(mid*8)/2/1e6, res.Traffic[1].Stats.Delivered)
}

// Mistakes in the mode are refused before anything is made, so these need
// no root. (The kernel mode with real time or with a path cannot be asked
// for: a session has one transport; a scenario with a path run in the
// kernel mode is refused, TestRealTimeRefusesPath.)
func TestKernelModeRefused(t *testing.T) {
	for name, s := range map[string]Session{
		"controller with quic": {Duration: time.Second, Transport: transport.Kernel{Controller: "bbr"}},
		"unknown transport":    {Duration: time.Second, Transport: transport.Kernel{Transport: "tcp"}},
		"cbr traffic":          {Duration: time.Second, Transport: transport.Kernel{}, Traffic: []traffic.Flow{{Name: "v", Kind: traffic.KindCBR, Rate: 64_000}}},
		"a flow's extra delay": {Duration: time.Second, Transport: transport.Kernel{}, Traffic: []traffic.Flow{{Name: "d", Kind: traffic.KindTCPBulk, Delay: time.Millisecond}}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := RunSession(s)
			require.ErrorIs(t, err, ErrUnsupported)
		})
	}
}

// TestKernelMeasureABR measures, without asserting, what the congestion-controller
// comparison sets beside the bulk flows, with the ABR on top: capture-to-display latency per transport
// and controller on the bad link, and the shares of media and a competing
// long TCP flow. It takes about a minute, so it runs only when asked.
func TestKernelMeasureABR(t *testing.T) {
	if os.Getenv("LAB_KERNEL_MEASURE") != "1" {
		t.Skip("skipping: a measurement of about a minute; set LAB_KERNEL_MEASURE=1 to run it")
	}
	requireKernel(t, "bbr", "cubic", "reno")
	const d = 12 * time.Second
	cases := []struct {
		name string
		mode transport.Kernel
	}{
		{"quic", transport.Kernel{}},
		{"websocket-bbr", transport.Kernel{Transport: transport.KernelWebSocket, Controller: "bbr"}},
		{"websocket-cubic", transport.Kernel{Transport: transport.KernelWebSocket, Controller: "cubic"}},
		{"websocket-reno", transport.Kernel{Transport: transport.KernelWebSocket, Controller: "reno"}},
		{"quic+cubic-flow", transport.Kernel{Competing: "cubic"}},
		{"quic+bbr-flow", transport.Kernel{Competing: "bbr"}},
		{"websocket-cubic+cubic-flow", transport.Kernel{Transport: transport.KernelWebSocket, Controller: "cubic", Competing: "cubic"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := badLinkSession(d, c.mode)
			s.Lead = HandshakeLead // as a scenario runs
			a, err := abr.New(abr.Config{})
			require.NoError(t, err)
			s.Agent = agent.Config{Controller: a}
			res := runKernel(t, s)
			k := res.Kernel
			line := fmt.Sprintf("transport=%s cc=%s median=%v displayed=%d/%d media=%.2fMbit/s",
				k.Transport, k.Controller, quantile.Median(res.Latencies(k.Warmup)).Round(time.Millisecond),
				len(res.Displayed()), len(res.Frames), k.MediaGoodput/1e6)
			if k.Tunnel != nil {
				line += fmt.Sprintf(" tunnel-retrans=%d tunnel-rtt=%v", k.Tunnel.Retransmits, k.Tunnel.RTT)
			}
			if f := k.Competing; f != nil {
				line += fmt.Sprintf(" flow(%s)=%.2fMbit/s flow-share=%.0f%% flow-rtt=%v", f.Controller, f.Goodput/1e6, 100*f.Share, f.Sender.RTT)
			}
			t.Log(line)
		})
	}
}
