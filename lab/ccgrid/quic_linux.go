//go:build linux

package ccgrid

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/netem/kernel"
	"github.com/nuvirahub/latencylab/netem/quicpair"
)

// runQUICCell runs the QUIC row's cell: one QUIC bulk stream from a UDP
// socket made in A to one made in B, on a fresh pair with the column's
// links, measured like runCell's TCP flow: goodput and link queueing over
// the same window after the same warm-up.
//
// quicpair.Bulk counts from the first byte, slow start included, so that
// the row would not compare with TCP's; this is the same transfer with the
// receiver's count read at the warm-up's end as well.
func runQUICCell(ctx context.Context, g Grid, col Column, root string, traces map[string]*netem.Trace) (Cell, error) {
	p, epoch, err := newPair(g, col, root)
	if err != nil {
		return Cell{}, err
	}
	defer p.Close()

	// The sender (quicpair's client) in A, the receiver in B: the data
	// crosses A to B, the TCP flows' direction.
	var sendConn, recvConn *net.UDPConn
	if err := p.InA(func() (err error) {
		sendConn, err = net.ListenUDP("udp4", &net.UDPAddr{IP: p.AddrA().AsSlice()})
		return err
	}); err != nil {
		return Cell{}, fmt.Errorf("quic sender socket: %w", err)
	}
	defer sendConn.Close()
	if err := p.InB(func() (err error) {
		recvConn, err = net.ListenUDP("udp4", &net.UDPAddr{IP: p.AddrB().AsSlice()})
		return err
	}); err != nil {
		return Cell{}, fmt.Errorf("quic receiver socket: %w", err)
	}
	defer recvConn.Close()
	qp, err := quicpair.Open(ctx, recvConn, sendConn, nil, nil)
	if err != nil {
		return Cell{}, err
	}
	defer qp.Close()

	d := g.Duration()
	warmup := min(kernel.MaxWarmup, d/4)
	var received atomic.Int64
	readDone := make(chan error, 1)
	go func() {
		s, err := qp.Server.AcceptStream(ctx)
		if err != nil {
			readDone <- err
			return
		}
		_, err = io.Copy(countWriter{&received}, s)
		readDone <- err
	}()
	s, err := qp.Client.OpenStreamSync(ctx)
	if err != nil {
		return Cell{}, fmt.Errorf("quic bulk: open stream: %w", err)
	}
	start := time.Now()
	end := start.Add(d)
	type snapshot struct {
		bytes int64
		at    time.Time
		link  netem.Stats
	}
	snap := make(chan snapshot, 1)
	timer := time.AfterFunc(warmup, func() {
		ab, _ := p.Stats()
		snap <- snapshot{bytes: received.Load(), at: time.Now(), link: ab}
	})
	defer timer.Stop()
	if err := s.SetWriteDeadline(end); err != nil {
		return Cell{}, err
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := s.Write(chunk); err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				return Cell{}, fmt.Errorf("quic bulk: write: %w", err)
			}
			break
		}
	}
	stopAt := time.Now()
	total := received.Load()
	ab1, _ := p.Stats()
	stats := qp.Client.ConnectionStats()
	s.CancelWrite(0)
	var s0 snapshot
	select {
	case s0 = <-snap:
	case <-ctx.Done():
		return Cell{}, ctx.Err()
	}
	window := stopAt.Sub(s0.at)
	if window <= 0 {
		return Cell{}, fmt.Errorf("quic bulk: empty window")
	}
	c := Cell{
		Controller: QUICRow, Column: col.Name,
		GoodputBps:    float64(total-s0.bytes) * 8 / window.Seconds(),
		SRTTMS:        ms(stats.SmoothedRTT),
		MinRTTMS:      ms(stats.MinRTT),
		BaseRTTMS:     ms(col.BaseRTT()),
		Retransmits:   uint32(stats.PacketsLost),
		Segments:      uint32(stats.PacketsSent),
		WindowSeconds: window.Seconds(),
	}
	if stats.PacketsSent > 0 {
		c.RetransPercent = 100 * float64(stats.PacketsLost) / float64(stats.PacketsSent)
	}
	if col.IsTrace() {
		c.CapacityBps = traceCapacity(traces[col.TraceDown], s0.at.Sub(epoch), stopAt.Sub(epoch))
	} else {
		c.CapacityBps = float64(p.Rate())
	}
	if c.CapacityBps > 0 {
		c.Utilisation = c.GoodputBps / c.CapacityBps
	}
	if n := ab1.Queued.Packets - s0.link.Queued.Packets; n > 0 {
		c.QueueDelayMeanMS = ms((ab1.Queued.Total - s0.link.Queued.Total) / time.Duration(n))
	}
	c.QueueDelayMaxMS = ms(ab1.Queued.Max)
	for reason, n := range ab1.Dropped {
		if c.Drops == nil {
			c.Drops = map[string]uint64{}
		}
		c.Drops[string(reason)] = n.Packets
	}
	return c, nil
}

// countWriter counts what the receiver read, for the window's edges.
type countWriter struct{ n *atomic.Int64 }

func (w countWriter) Write(b []byte) (int, error) {
	w.n.Add(int64(len(b)))
	return len(b), nil
}
