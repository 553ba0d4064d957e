package flows

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/nuvirahub/latencylab/internal/clock"

	"github.com/quic-go/quic-go"

	"github.com/nuvirahub/latencylab/netem/quicpair"
	"github.com/nuvirahub/latencylab/netem/tcplike"
)

// Every flow below runs from its start until ctx ends, owns the two
// PacketConns it is given (it closes them when it returns) and adds the
// payload its receiver gets to meter. An error is returned only when the
// flow could not run at all; a flow cut short by ctx is not an error.

// bulkChunk is what a bulk sender writes at a time.
const bulkChunk = 64 << 10

// QUICBulk sends as fast as QUIC allows, on one stream of a quic-go
// connection (NewReno, its congestion controller) from sender to
// receiver. The connection's handshake is part of the flow, as a
// download's would be. keyLog, when not nil, receives the connection's TLS
// secrets (for Wireshark).
func QUICBulk(ctx context.Context, sender, receiver net.PacketConn, meter *Meter, keyLog io.Writer) (Stats, error) {
	defer sender.Close()
	defer receiver.Close()
	pair, err := quicpair.OpenKeyLog(ctx, receiver, sender, nil, nil, keyLog)
	if err != nil {
		if ctx.Err() != nil {
			return Stats{}, nil // stopped before it connected
		}
		return Stats{}, fmt.Errorf("flows: quic bulk: %w", err)
	}
	// The end: the statistics as they stand, then both connections
	// closed, which ends the writes and the reads below.
	var cs quic.ConnectionStats
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		<-ctx.Done()
		cs = pair.Client.ConnectionStats()
		pair.Close()
	}()
	var st Stats
	var wg sync.WaitGroup
	var delivered int64
	wg.Go(func() {
		s, err := pair.Server.AcceptStream(ctx)
		if err != nil {
			return
		}
		buf := make([]byte, bulkChunk)
		for {
			n, err := s.Read(buf)
			if n > 0 {
				meter.Add(time.Now(), n)
				delivered += int64(n)
			}
			if err != nil {
				return
			}
		}
	})
	if s, err := pair.Client.OpenStreamSync(ctx); err == nil {
		chunk := make([]byte, bulkChunk)
		for {
			n, err := s.Write(chunk)
			st.Sent += int64(n)
			if err != nil {
				break
			}
		}
	}
	<-closed
	wg.Wait()
	st.Delivered = delivered
	st.Packets, st.Lost = int64(cs.PacketsSent), int64(cs.PacketsLost)
	return st, nil
}

// TCPBulk sends as fast as the TCP-like model's congestion controller
// allows (cfg) from sender to receiver: the receiver's client asks for an
// unbounded transfer, as a download of a large file.
func TCPBulk(ctx context.Context, sender, receiver net.PacketConn, cfg tcplike.Config, meter *Meter) (Stats, error) {
	srv, err := tcplike.Serve(sender, cfg)
	if err != nil {
		sender.Close()
		receiver.Close()
		return Stats{}, fmt.Errorf("flows: tcp bulk: %w", err)
	}
	cli := tcplike.NewClient(receiver)
	res, err := cli.Fetch(ctx, sender.LocalAddr(), 0, meter.Add)
	cli.Close()
	srv.Close()
	if err != nil && !errors.Is(err, ctx.Err()) {
		return Stats{}, fmt.Errorf("flows: tcp bulk: %w", err)
	}
	ss := srv.Stats()
	return Stats{Sent: ss.Bytes, Delivered: res.Bytes, Packets: ss.Segments, Lost: ss.Retransmits, Marked: res.Marked}, nil
}

// MinCBRSize is the smallest datagram CBR sends: its first 8 bytes carry
// the datagram's sequence number.
const MinCBRSize = 8

// CBR sends datagrams of size bytes at rate bits per second from sender
// to receiver, each at its instant (start + k x size x 8 / rate), whatever
// the path does: a constant-bitrate source with no congestion control.
// Lost counts the datagrams not received by the end, those still in
// flight included.
func CBR(ctx context.Context, sender, receiver net.PacketConn, rate int64, size int, meter *Meter) (Stats, error) {
	defer sender.Close()
	if rate <= 0 || size < MinCBRSize {
		receiver.Close()
		return Stats{}, fmt.Errorf("flows: cbr at %d bit/s of %d-byte datagrams: expected a positive rate and at least %d bytes", rate, size, MinCBRSize)
	}
	var wg sync.WaitGroup
	var received, delivered int64
	wg.Go(func() {
		buf := make([]byte, 64<<10)
		for {
			n, _, err := receiver.ReadFrom(buf)
			if err != nil {
				return
			}
			received++
			delivered += int64(n)
			meter.Add(time.Now(), n)
		}
	})
	to := receiver.LocalAddr()
	start := time.Now()
	buf := make([]byte, size)
	var st Stats
	for k := int64(0); ; k++ {
		at := start.Add(time.Duration(float64(k) * float64(size*8) / float64(rate) * 1e9))
		if !clock.SleepUntil(ctx, at) {
			break
		}
		binary.BigEndian.PutUint64(buf, uint64(k))
		if _, err := sender.WriteTo(buf, to); err != nil {
			break
		}
		st.Packets++
		st.Sent += int64(size)
	}
	receiver.Close() // ends the reads
	wg.Wait()
	st.Delivered = delivered
	st.Lost = st.Packets - received
	return st, nil
}

// WebConfig is a web flow's law: objects whose sizes follow a truncated
// lognormal distribution, fetched one at a time, each on a new TCP-like
// connection, with exponential think times between them (an on/off
// source).
//
// The defaults are the main object of the HTTP traffic model that 3GPP2
// defined for cdma2000 evaluations (C.R1002-0) and 3GPP reused (TR
// 36.814, ns-3's ThreeGppHttpClient): a lognormal of mean 10710 B and
// standard deviation 25032 B, truncated to [100 B, 2 MB], and a reading
// time with an exponential law of mean 30 s. Barford and Crovella (SURGE,
// 1998) found web file sizes lognormal in their body too.
type WebConfig struct {
	// Mean and SD are the mean and the standard deviation of the
	// untruncated lognormal, in bytes (0: the defaults).
	Mean, SD int64
	// Min and Max truncate it: a size outside is drawn again (0: the
	// defaults).
	Min, Max int64
	// Think is the mean of the exponential think time after each object
	// (0: the default).
	Think time.Duration
	// TCP configures the connections (its zero value is CUBIC).
	TCP tcplike.Config
}

// The defaults of WebConfig.
const (
	DefaultWebMean  = 10710
	DefaultWebSD    = 25032
	DefaultWebMin   = 100
	DefaultWebMax   = 2 << 20
	DefaultWebThink = 30 * time.Second
)

// WithDefaults fills in the defaults.
func (c WebConfig) WithDefaults() WebConfig {
	if c.Mean == 0 {
		c.Mean = DefaultWebMean
	}
	if c.SD == 0 {
		c.SD = DefaultWebSD
	}
	if c.Min == 0 {
		c.Min = DefaultWebMin
	}
	if c.Max == 0 {
		c.Max = DefaultWebMax
	}
	if c.Think == 0 {
		c.Think = DefaultWebThink
	}
	return c
}

// Lognormal returns the parameters of the lognormal whose mean and
// standard deviation are c's: sigma^2 = ln(1 + SD^2/Mean^2), mu = ln(Mean)
// - sigma^2/2.
func (c WebConfig) Lognormal() (mu, sigma float64) {
	c = c.WithDefaults()
	m, s := float64(c.Mean), float64(c.SD)
	v := math.Log(1 + s*s/(m*m))
	return math.Log(m) - v/2, math.Sqrt(v)
}

// Size draws an object's size from r.
func (c WebConfig) Size(r *rand.Rand) int64 {
	c = c.WithDefaults()
	mu, sigma := c.Lognormal()
	for range 1000 {
		x := math.Round(math.Exp(mu + sigma*r.NormFloat64()))
		if x >= float64(c.Min) && x <= float64(c.Max) {
			return int64(x)
		}
	}
	// A truncation the law almost never reaches: the nearest bound.
	return min(c.Max, max(c.Min, int64(math.Round(math.Exp(mu)))))
}

// ThinkTime draws a think time from r.
func (c WebConfig) ThinkTime(r *rand.Rand) time.Duration {
	c = c.WithDefaults()
	return time.Duration(r.ExpFloat64() * float64(c.Think))
}

// Web fetches objects from server to client until ctx ends: an object
// (a new connection: SYN, SYN-ACK, the request, then the object under
// slow start), then a think time, then the next. Sizes and think times
// are drawn in turn from r, so the k-th object has the same size in every
// run with the same source, however fast the path carried the others.
func Web(ctx context.Context, server, client net.PacketConn, cfg WebConfig, r *rand.Rand, meter *Meter) (Stats, error) {
	cfg = cfg.WithDefaults()
	srv, err := tcplike.Serve(server, cfg.TCP)
	if err != nil {
		server.Close()
		client.Close()
		return Stats{}, fmt.Errorf("flows: web: %w", err)
	}
	cli := tcplike.NewClient(client)
	defer srv.Close()
	defer cli.Close()
	var st Stats
	for ctx.Err() == nil {
		size := cfg.Size(r)
		think := cfg.ThinkTime(r)
		res, err := cli.Fetch(ctx, server.LocalAddr(), size, meter.Add)
		st.Delivered += res.Bytes
		st.Objects = append(st.Objects, Object{Size: size, Start: res.Started, Done: res.Done})
		if err != nil {
			break
		}
		if !clock.SleepUntil(ctx, time.Now().Add(think)) {
			break
		}
	}
	ss := srv.Stats()
	st.Sent, st.Packets, st.Lost = ss.Bytes, ss.Segments, ss.Retransmits
	return st, nil
}
