package quicpair

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/quic-go/quic-go"
)

// BulkResult is what a bulk transfer measured.
type BulkResult struct {
	// Duration is how long the client sent.
	Duration time.Duration
	// Bytes is what the server's application received within Duration.
	Bytes int64
	// Sender is the client connection's statistics at the end (RTT,
	// congestion window, packets sent and lost).
	Sender quic.ConnectionStats
}

// Goodput is the application-level throughput in bits per second.
func (r BulkResult) Goodput() float64 {
	if r.Duration <= 0 {
		return 0
	}
	return float64(r.Bytes) * 8 / r.Duration.Seconds()
}

func (r BulkResult) String() string {
	return fmt.Sprintf("%d bytes in %v: goodput %.3f Mbit/s, srtt %v, cwnd %d B, %d/%d packets lost",
		r.Bytes, r.Duration, r.Goodput()/1e6, r.Sender.SmoothedRTT, r.Sender.CongestionWindow,
		r.Sender.PacketsLost, r.Sender.PacketsSent)
}

// Bulk sends as fast as QUIC allows from the client to the server on one
// stream for d (like iperf), and counts what the server reads by then. The
// flow is limited only by the path and quic-go's congestion controller
// (NewReno).
func Bulk(ctx context.Context, p *Pair, d time.Duration) (BulkResult, error) {
	start := time.Now()
	end := start.Add(d)
	received := make(chan int64, 1)
	acceptErr := make(chan error, 1)
	go func() {
		s, err := p.Server.AcceptStream(ctx)
		if err != nil {
			acceptErr <- err
			return
		}
		var n int64
		buf := make([]byte, 64<<10)
		for {
			k, err := s.Read(buf)
			if time.Now().After(end) {
				break
			}
			n += int64(k)
			if err != nil {
				break
			}
		}
		s.CancelRead(0)
		received <- n
	}()
	s, err := p.Client.OpenStreamSync(ctx)
	if err != nil {
		return BulkResult{}, fmt.Errorf("quicpair: bulk: open stream: %w", err)
	}
	if err := s.SetWriteDeadline(end); err != nil {
		return BulkResult{}, err
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := s.Write(chunk); err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				return BulkResult{}, fmt.Errorf("quicpair: bulk: write: %w", err)
			}
			break
		}
	}
	res := BulkResult{Duration: d, Sender: p.Client.ConnectionStats()}
	// Ends the server's read; what it read before the end counts.
	s.CancelWrite(0)
	select {
	case res.Bytes = <-received:
	case err := <-acceptErr:
		return res, fmt.Errorf("quicpair: bulk: accept: %w", err)
	case <-ctx.Done():
		return res, ctx.Err()
	}
	return res, nil
}
