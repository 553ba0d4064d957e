package flows

import (
	"context"
	"math"
	"net"
	"net/netip"
	"slices"
	"testing"
	"testing/cryptotest"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/internal/seeded"
	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/netem/tcplike"
)

var (
	farIP  = netip.MustParseAddr("10.0.0.2") // the sender's host: the internet
	homeIP = netip.MustParseAddr("10.0.0.1") // the receiver's
)

// network makes a path whose far -> home direction is down.
func network(t *testing.T, down, up []netem.Impairment) *netem.Network {
	t.Helper()
	n := netem.NewNetwork(1)
	_, err := n.SetLink(farIP, homeIP, netem.LinkConfig{Name: "down", Impairments: down})
	require.NoError(t, err)
	_, err = n.SetLink(homeIP, farIP, netem.LinkConfig{Name: "up", Impairments: up})
	require.NoError(t, err)
	return n
}

func endpoints(t *testing.T, n *netem.Network) (sender, receiver *netem.PacketConn) {
	t.Helper()
	sender, err := n.Listen(netip.AddrPortFrom(farIP, 0))
	require.NoError(t, err)
	receiver, err = n.Listen(netip.AddrPortFrom(homeIP, 0))
	require.NoError(t, err)
	return sender, receiver
}

func TestMeter(t *testing.T) {
	zero := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	m := NewMeter(zero, 250*time.Millisecond)
	m.Add(zero.Add(-time.Second), 1) // before zero: the first period
	m.Add(zero.Add(249*time.Millisecond), 2)
	m.Add(zero.Add(250*time.Millisecond), 3)
	m.Add(zero.Add(time.Second), 4)
	require.Equal(t, []int64{3, 3, 0, 0, 4}, m.Buckets())
	require.Equal(t, int64(10), m.Total())
}

// CBR sends its datagrams at their instants: 1 Mbit/s of 1000-byte
// datagrams is one every 8 ms, arriving 10 ms later, so every second of
// arrivals holds 125 of them but the first (124: the first arrives at
// 10 ms); the two still on their way at the end count as lost.
func TestCBRDeliversItsRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := network(t, []netem.Impairment{&netem.Delay{Delay: 10 * time.Millisecond}}, nil)
		defer n.Close()
		s, r := endpoints(t, n)
		m := NewMeter(time.Now(), time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second+time.Millisecond)
		defer cancel()
		st, err := CBR(ctx, s, r, 1_000_000, 1000, m)
		require.NoError(t, err)
		require.Equal(t, int64(1251), st.Packets, "k x 8 ms for k = 0..1250")
		require.Equal(t, int64(1251_000), st.Sent)
		require.Equal(t, int64(2), st.Lost, "those sent at 9.992 s and 10 s")
		require.Equal(t, int64(1249_000), st.Delivered)
		require.Equal(t, []int64{124_000, 125_000, 125_000, 125_000, 125_000, 125_000, 125_000, 125_000, 125_000, 125_000}, m.Buckets(),
			"1 Mbit/s each second")
	})
}

// Over a bottleneck of half its rate, CBR does not slow down: the link
// carries its capacity and the queue drops the rest.
func TestCBROverABottleneck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := network(t, []netem.Impairment{&netem.Rate{Rate: 500_000, Queue: netem.QueueLimit{Packets: 10}}}, nil)
		defer n.Close()
		s, r := endpoints(t, n)
		m := NewMeter(time.Now(), time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		st, err := CBR(ctx, s, r, 1_000_000, 1000, m)
		require.NoError(t, err)
		require.InDelta(t, 0.5, float64(st.Lost)/float64(st.Packets), 0.01)
		var b int64
		for _, x := range m.Buckets()[2:10] {
			b += x
		}
		require.InDelta(t, 500_000, b, 1000, "8 s of the link's 500 kbit/s")
	})
}

// Delayed adds its delay to every datagram the endpoint sends, and to
// nothing it receives.
func TestDelayed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := network(t, []netem.Impairment{&netem.Delay{Delay: 10 * time.Millisecond}}, []netem.Impairment{&netem.Delay{Delay: 10 * time.Millisecond}})
		defer n.Close()
		s, r := endpoints(t, n)
		ds, err := Delayed(n, s, 30*time.Millisecond, "extra")
		require.NoError(t, err)
		defer ds.Close()
		defer r.Close()
		start := time.Now()
		_, err = ds.WriteTo([]byte("down"), r.LocalAddr())
		require.NoError(t, err)
		buf := make([]byte, 16)
		k, from, err := r.ReadFrom(buf)
		require.NoError(t, err)
		require.Equal(t, "down", string(buf[:k]))
		require.Equal(t, s.LocalAddr().String(), from.String(), "from the endpoint's own address")
		require.Equal(t, 40*time.Millisecond, time.Since(start))
		start = time.Now()
		_, err = r.WriteTo([]byte("up"), ds.LocalAddr())
		require.NoError(t, err)
		_, _, err = ds.ReadFrom(buf)
		require.NoError(t, err)
		require.Equal(t, 10*time.Millisecond, time.Since(start))
	})
}

// The bulk flows fill a 10 Mbit/s bottleneck: QUIC's goodput and the
// TCP-like model's are near the link's rate less their headers.
func TestBulkFlowsFillTheLink(t *testing.T) {
	for _, kind := range []string{"quic", tcplike.Reno, tcplike.CUBIC} {
		t.Run(kind, func(t *testing.T) {
			cryptotest.SetGlobalRandom(t, 1)
			synctest.Test(t, func(t *testing.T) {
				n := network(t, []netem.Impairment{&netem.Rate{Rate: 10_000_000, Queue: netem.QueueLimit{Packets: 100}}, &netem.Delay{Delay: 20 * time.Millisecond}},
					[]netem.Impairment{&netem.Delay{Delay: 20 * time.Millisecond}})
				defer n.Close()
				s, r := endpoints(t, n)
				m := NewMeter(time.Now(), time.Second)
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				var st Stats
				var err error
				if kind == "quic" {
					st, err = QUICBulk(ctx, s, r, m, nil)
				} else {
					st, err = TCPBulk(ctx, s, r, tcplike.Config{Congestion: kind}, m)
				}
				require.NoError(t, err)
				var late int64
				for _, b := range m.Buckets()[5:20] {
					late += b
				}
				goodput := float64(late*8) / 15
				require.Greater(t, goodput, 8.5e6, "%.2f Mbit/s", goodput/1e6)
				require.Less(t, goodput, 10e6)
				require.Equal(t, m.Total(), st.Delivered)
				require.GreaterOrEqual(t, st.Sent, st.Delivered)
				require.Positive(t, st.Packets)
			})
		})
	}
}

// Web's object sizes follow the lognormal its mean and standard deviation
// give (3GPP's defaults here, with the truncation moved out of the way):
// the logarithms of 20000 draws pass a Kolmogorov-Smirnov test against
// the normal (mu, sigma) at the 0.1% level, and their mean and deviation
// are mu and sigma within their 99.9% intervals. Think times are
// exponential with their mean.
func TestWebSizesFollowTheDistribution(t *testing.T) {
	cfg := WebConfig{Min: 1, Max: 1 << 40}
	mu, sigma := cfg.Lognormal()
	require.InDelta(t, 8.35, mu, 0.01, "3GPP's main object: mu 8.35")
	require.InDelta(t, 1.37, sigma, 0.01, "and sigma 1.37")
	r := seeded.New(1, "web")
	const n = 20000
	logs := make([]float64, n)
	var think float64
	for i := range logs {
		logs[i] = math.Log(float64(cfg.Size(r)))
		think += cfg.ThinkTime(r).Seconds()
	}
	slices.Sort(logs)
	var d, sum, sq float64
	for i, x := range logs {
		f := 0.5 * (1 + math.Erf((x-mu)/(sigma*math.Sqrt2)))
		d = max(d, math.Abs(f-float64(i)/n), math.Abs(f-float64(i+1)/n))
		sum += x
	}
	mean := sum / n
	for _, x := range logs {
		sq += (x - mean) * (x - mean)
	}
	sd := math.Sqrt(sq / (n - 1))
	// Sizes are whole bytes: the rounding moves small logarithms a
	// little, far less than the test's critical value (1.95/sqrt(n)).
	require.Less(t, d, 1.95/math.Sqrt(n), "KS distance")
	require.InDelta(t, mu, mean, 3.29*sigma/math.Sqrt(n))
	require.InDelta(t, sigma, sd, 3.29*sigma/math.Sqrt(2*n))
	require.InDelta(t, 30, think/n, 3.29*30/math.Sqrt(n), "think times: exponential, mean 30 s")

	// The defaults' truncation keeps every draw in [100 B, 2 MB].
	def := WebConfig{}
	for range 5000 {
		x := def.Size(r)
		require.GreaterOrEqual(t, x, int64(100))
		require.LessOrEqual(t, x, int64(2<<20))
	}
}

// A web flow fetches objects one after another, each as large as drawn:
// the sizes are the source's draws in order (whatever the path did), the
// bytes delivered are the finished objects' sizes and the rest of the last.
func TestWebFetchesItsObjects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := network(t, []netem.Impairment{&netem.Rate{Rate: 5_000_000, Queue: netem.QueueLimit{Packets: 50}}, &netem.Delay{Delay: 20 * time.Millisecond}},
			[]netem.Impairment{&netem.Delay{Delay: 20 * time.Millisecond}})
		defer n.Close()
		s, r := endpoints(t, n)
		m := NewMeter(time.Now(), time.Second)
		cfg := WebConfig{Think: time.Second}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		st, err := Web(ctx, s, r, cfg, seeded.New(7, "web"), m)
		require.NoError(t, err)
		require.Greater(t, len(st.Objects), 30, "about one a second")
		draws := seeded.New(7, "web")
		var done int64
		for i, o := range st.Objects {
			require.Equal(t, cfg.Size(draws), o.Size, "object %d", i)
			cfg.ThinkTime(draws)
			if !o.Done.IsZero() {
				done += o.Size
				// Two round trips (SYN, request) before the first byte.
				require.Greater(t, o.Done.Sub(o.Start), 80*time.Millisecond)
			} else {
				require.Equal(t, len(st.Objects)-1, i, "only the last may be unfinished")
			}
		}
		require.GreaterOrEqual(t, st.Delivered, done)
		require.Equal(t, m.Total(), st.Delivered)
	})
}

var _ net.PacketConn = (*delayedConn)(nil)

// A delayed endpoint shows quic-go a plain conn: the endpoint's
// out-of-band methods would write around the delay.
func TestMTUDelayedHidesTheOutOfBandAPI(t *testing.T) {
	n := netem.NewNetwork(1)
	defer n.Close()
	c, err := Delayed(n, n.MustListen("10.0.0.1:1"), time.Millisecond, "d")
	require.NoError(t, err)
	defer c.Close()
	_, oob := c.(interface {
		WriteMsgUDP(b, oob []byte, addr *net.UDPAddr) (n, oobn int, err error)
	})
	require.False(t, oob)
	_, buffer := c.(interface{ SetReadBuffer(int) error })
	require.True(t, buffer, "quic-go still sets the endpoint's receive buffer")
}
