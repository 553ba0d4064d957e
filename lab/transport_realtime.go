package lab

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/netem/quicpair"
)

// realTimeTransport is a session in real time (Session.RealTime): real
// UDP sockets on loopback through the real-time impairment proxy.
type realTimeTransport struct{}

// open is the real-time set-up: the two PCs as two UDP sockets on
// loopback, the viewer dialling the proxy, which forwards to the agent
// through the session's links. The links get the session's seed and the
// names the in-memory transport gives them, so their random decisions are the ones a
// virtual run of the same session draws.
func (realTimeTransport) open(ctx context.Context, s Session, epoch time.Time, capt *recording) (_ *opened, err error) {
	var closers []func() error
	closeAll := func() {
		// Last made, first closed: the QUIC connections before the proxy
		// that carries them, the proxy before the sockets it writes to.
		for i := len(closers) - 1; i >= 0; i-- {
			_ = closers[i]()
		}
	}
	defer func() {
		if err != nil {
			closeAll()
		}
	}()
	loopback := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}
	agentConn, err := net.ListenUDP("udp", loopback)
	if err != nil {
		return nil, fmt.Errorf("lab: agent socket: %w", err)
	}
	closers = append(closers, agentConn.Close)
	viewerConn, err := net.ListenUDP("udp", loopback)
	if err != nil {
		return nil, fmt.Errorf("lab: viewer socket: %w", err)
	}
	closers = append(closers, viewerConn.Close)
	upTap, downTap := capt.taps()
	proxy, err := netem.NewProxy(netem.ProxyConfig{
		Target:  agentConn.LocalAddr().String(),
		Forward: netem.LinkConfig{Name: "uplink", Seed: s.Seed, Epoch: epoch, Impairments: s.Uplink, Timeline: s.UplinkTimeline, Tap: upTap},
		Reverse: netem.LinkConfig{Name: "downlink", Seed: s.Seed, Epoch: epoch, Impairments: s.Downlink, Timeline: s.DownlinkTimeline, Tap: downTap},
	})
	if err != nil {
		return nil, fmt.Errorf("lab: proxy: %w", err)
	}
	closers = append(closers, proxy.Close)
	pair, err := quicpair.OpenKeyLog(ctx, agentConn, viewerConn, proxy.Addr(), capt.quicConfig(), capt.keyLog())
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	closers = append(closers, pair.Close)
	return &opened{
		agent: pair.Server, viewer: pair.Client,
		stats: proxy.Stats, // forward is the viewer's up link, reverse its down link
		close: closeAll,
	}, nil
}
