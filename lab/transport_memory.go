package lab

import (
	"context"
	"fmt"
	"time"

	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/netem/quicpair"
)

// memoryTransport is the plain set-up: the two PCs on one in-memory
// network (virtual time inside a synctest bubble), joined by the
// session's links, QUIC straight between them.
type memoryTransport struct{}

// open makes the network and its two links and connects the PCs.
func (memoryTransport) open(ctx context.Context, s Session, epoch time.Time, capt *recording) (_ *opened, err error) {
	n := netem.NewNetwork(s.Seed)
	defer func() {
		if err != nil {
			n.Close()
		}
	}()
	upTap, downTap := capt.taps()
	up, err := n.SetLink(ViewerAddr.Addr(), AgentAddr.Addr(), netem.LinkConfig{Name: "uplink", Epoch: epoch, Impairments: s.Uplink, Timeline: s.UplinkTimeline, Tap: upTap})
	if err != nil {
		return nil, fmt.Errorf("lab: uplink: %w", err)
	}
	down, err := n.SetLink(AgentAddr.Addr(), ViewerAddr.Addr(), netem.LinkConfig{Name: "downlink", Epoch: epoch, Impairments: s.Downlink, Timeline: s.DownlinkTimeline, Tap: downTap})
	if err != nil {
		return nil, fmt.Errorf("lab: downlink: %w", err)
	}
	agentConn, err := n.Listen(AgentAddr)
	if err != nil {
		return nil, err
	}
	viewerConn, err := n.Listen(ViewerAddr)
	if err != nil {
		return nil, err
	}
	pair, err := quicpair.OpenKeyLog(ctx, agentConn, viewerConn, nil, capt.quicConfig(), capt.keyLog())
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	return &opened{agent: pair.Server, viewer: pair.Client, stats: linkStats(up, down), traffic: memoryTraffic{n}, close: func() {
		pair.Close()
		n.Close()
	}}, nil
}
