package lab

import (
	"bytes"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/internal/connect"
	"github.com/nuvirahub/latencylab/internal/evidence"
	"github.com/nuvirahub/latencylab/internal/groundtruth"
	"github.com/nuvirahub/latencylab/internal/quantile"
	"github.com/nuvirahub/latencylab/lab/transport"
	"github.com/nuvirahub/latencylab/netem/nat"
	"github.com/nuvirahub/latencylab/netem/quicpair"
	"github.com/nuvirahub/latencylab/netem/relay"
)

// lanPath is the write-up's LAN with both PCs behind one router and the
// relay 2.5 ms from it (N17, N18).
func lanPath(mod func(*transport.Topology)) Session {
	router := nat.PortRestrictedCone
	p := transport.Topology{Connect: "auto", AgentNAT: &router, SameRouter: true, RelayDelay: 2500 * time.Microsecond}
	if mod != nil {
		mod(&p)
	}
	return Session{Seed: 1, Duration: 10 * time.Second, Uplink: lan(), Downlink: lan(), Lead: PathLead, Transport: p}
}

// N17, N18, E14: on one LAN the session goes direct between the PCs; the
// debug switches send it through the relay, and change nothing else: the
// same frames reach the screen, each exactly the relay's two 2.5 ms legs
// later. ignore_lan_candidates gets there after the direct attempt's 2 s
// time-out, force_relay at once; the session, which starts at time zero
// either way, is the same.
func TestPathSwitchesChangeOnlyThePath(t *testing.T) {
	direct := run(t, lanPath(nil))
	forced := run(t, lanPath(func(p *transport.Topology) { p.ForceRelay = true }))
	ignored := run(t, lanPath(func(p *transport.Topology) { p.IgnoreLANCandidates = true }))

	require.Equal(t, connect.PathDirectLAN, direct.Path.Path)
	require.Equal(t, connect.PathRelay, forced.Path.Path)
	require.Equal(t, connect.PathRelay, ignored.Path.Path)
	require.Len(t, forced.Path.Steps, 1, "force_relay skips the direct attempt")
	require.Len(t, ignored.Path.Steps, 2, "ignore_lan_candidates tries direct first, with public candidates only")
	require.Equal(t, connect.PathDirect, ignored.Path.Steps[0].Path)
	require.Error(t, ignored.Path.Steps[0].Err)
	require.Equal(t, 2*time.Second, ignored.Path.Steps[0].Duration().Truncate(time.Millisecond), "the punch time-out")

	// Frames captured in the last 100 ms may still be on their way at the
	// end, later on the longer path: compare the ones before.
	settled := func(r *Result) []groundtruth.Frame {
		var out []groundtruth.Frame
		for _, f := range r.Displayed() {
			if f.Captured.Sub(r.Start) < 9900*time.Millisecond {
				out = append(out, f)
			}
		}
		return out
	}
	d, f, i := settled(direct), settled(forced), settled(ignored)
	require.Equal(t, len(f), len(i))
	require.Equal(t, len(d), len(f))
	for k := range d {
		require.Equal(t, d[k].Seq, f[k].Seq)
		require.Equal(t, d[k].Bytes, f[k].Bytes, "the same frames")
		require.Equal(t, f[k].Bytes, i[k].Bytes, "the same frames")
		// QUIC's own framing may differ by a few bytes (packet number
		// lengths follow each connection's history): a byte is 8 ns at
		// 1 Gbit/s.
		require.InDelta(t, f[k].Latency(), i[k].Latency(), float64(time.Microsecond), "frame %d: both switches make the same session", f[k].Seq)
	}
	extra := quantile.Median(forced.Latencies(time.Second)) - quantile.Median(direct.Latencies(time.Second))
	// The relay adds its two legs, and 224 ns: the direct path's QUIC finds
	// the path MTU (its endpoints set DF) and sends 1441-byte packets, while
	// the relay's conn takes no DF and stays at 1280, so the median frame's
	// packets serialise differently on the 1 Gbit/s links (224 ns is 28
	// bytes there). Before endpoints took DF both stayed at 1280 and the
	// difference was 5 ms exactly.
	require.Equal(t, 5*time.Millisecond+224*time.Nanosecond, extra, "the relay adds its two legs and nothing else (N18: ~5 ms on a LAN)")
	t.Logf("direct-lan %v, relay %v: +%v; connect %v (forced) and %v (ignore LAN)",
		quantile.Median(direct.Latencies(time.Second)), quantile.Median(forced.Latencies(time.Second)), extra, forced.Path.Connect, ignored.Path.Connect)

	// The figures N18's and E14's evidence quote from this test: each
	// frame's delay through the relay, the switches' difference, the medians.
	// (The first frames wait for the connection, which takes another time
	// on each path.)
	lo, hi, sw := time.Duration(math.MaxInt64), time.Duration(0), time.Duration(0)
	for k := range d {
		sw = max(sw, (f[k].Latency() - i[k].Latency()).Abs())
		if d[k].Captured.Sub(direct.Start) >= time.Second {
			lo, hi = min(lo, f[k].Latency()-d[k].Latency()), max(hi, f[k].Latency()-d[k].Latency())
		}
	}
	msOf := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	n18 := evidence.For(t, "N18", "go test ./lab -run 'PathSwitches|RelaySees' -v")
	n18.Figure(`a relay ([\d.]+) ms away`, msOf(lanPath(nil).Transport.(transport.Topology).RelayDelay))
	n18.Figure(`every frame after the first second exactly ([\d.]+) ms later`, msOf(lo))
	n18.Figure(`every frame after the first second exactly ([\d.]+) ms later`, msOf(hi))
	n18.Figure(`\(([\d.]+) vs ([\d.]+) ms median\)`, msOf(quantile.Median(direct.Latencies(time.Second))), msOf(quantile.Median(forced.Latencies(time.Second))))
	n18.Done()
	e14 := evidence.For(t, "E14", "go test ./lab -run PathSwitches -v")
	e14.AtMost(`\(< (\d+) us\)`, float64(sw)/float64(time.Microsecond))
	e14.Done()
}

// N18: the relay forwards the QUIC packets as they are, end-to-end
// encrypted: the ALPN and server name every handshake carries in its
// ClientHello never appear in what it forwards.
func TestRelaySeesOnlyCiphertext(t *testing.T) {
	var mu sync.Mutex
	var forwarded [][]byte
	s := lanPath(func(p *transport.Topology) {
		p.ForceRelay = true
		p.Observe = func(_ relay.Role, data []byte) {
			mu.Lock()
			forwarded = append(forwarded, bytes.Clone(data))
			mu.Unlock()
		}
	})
	s.Duration = 2 * time.Second
	res := run(t, s)
	require.Equal(t, connect.PathRelay, res.Path.Path)
	require.NotEmpty(t, forwarded)
	// The QUIC handshake's ALPN and the certificate's server name are
	// plaintext inside TLS records only until keys exist; in QUIC they
	// travel in Initial packets, protected with keys derived from the
	// connection ID. A relay reading packets as they are sees neither.
	for _, marker := range [][]byte{[]byte(quicpair.ALPN), []byte(quicpair.ServerName)} {
		for _, d := range forwarded {
			require.False(t, bytes.Contains(d, marker), "the relay saw %q in clear", marker)
		}
	}
}

// Every NAT pairing through the lab's runner: which path the session
// takes. Hole punching works unless a symmetric router (a new port per
// destination) meets a port-restricted or symmetric one; the relay
// carries the rest. (internal/connect tests the same pairings on their
// own, with exact connect times.)
func TestPathEveryNATPairing(t *testing.T) {
	if testing.Short() {
		t.Skip("16 sessions")
	}
	names := []string{"full-cone", "restricted-cone", "port-restricted-cone", "symmetric"}
	presets := []nat.Config{nat.FullCone, nat.RestrictedCone, nat.PortRestrictedCone, nat.Symmetric}
	var table bytes.Buffer
	for a := range presets {
		for v := range presets {
			ac, vc := presets[a], presets[v]
			s := Session{Seed: 1, Duration: time.Second, Uplink: lan(), Downlink: lan(), Lead: PathLead,
				Transport: transport.Topology{Connect: "auto", AgentNAT: &ac, ViewerNAT: &vc, RelayDelay: 2500 * time.Microsecond}}
			var res *Result
			synctest.Test(t, func(t *testing.T) {
				var err error
				res, err = RunSession(s)
				require.NoError(t, err)
			})
			symmetric := func(i int) bool { return names[i] == "symmetric" }
			portBound := func(i int) bool { return names[i] == "symmetric" || names[i] == "port-restricted-cone" }
			want := connect.PathDirectPublic
			if (symmetric(a) && portBound(v)) || (symmetric(v) && portBound(a)) {
				want = connect.PathRelay
			}
			require.Equal(t, want, res.Path.Path, "agent %s, viewer %s", names[a], names[v])
			require.NotEmpty(t, res.Displayed(), "agent %s, viewer %s", names[a], names[v])
			table.WriteString(names[a] + " / " + names[v] + ": " + string(res.Path.Path) + " in " + res.Path.Connect.Round(time.Millisecond).String() + "\n")
		}
	}
	t.Logf("agent / viewer: path in connect time\n%s", table.String())
}
