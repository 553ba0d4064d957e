package relay

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/ipv4"
)

// BenchmarkRelayFlood measures what a flood of junk from unregistered
// sources does to a registered session through a real relay on loopback:
//
//	go test ./netem/relay -run '^$' -bench RelayFlood -benchtime 1x
//
// The session's two peers bind to the relay over UDP and play ping-pong
// with 200-byte datagrams, one every millisecond, for LAB_FLOOD (default
// 10 s); "quiet" runs alone, "flood" beside a sender of 100 000 datagrams a
// second from 64 unregistered ports: random bytes, truncated bind messages
// and replays of the session's own datagrams. Reported: the session's
// one-way latency (half the round trip) median and p99, the flood's
// achieved rate, the relay's drops by reason, and the Go heap in use after
// the run against before it. Figures, with one check of what they name
// (floodRan): the session's pings went one a millisecond and the flood
// reached its 100 000 a second, each within 10%.
func BenchmarkRelayFlood(b *testing.B) {
	d := 10 * time.Second
	if s := os.Getenv("LAB_FLOOD"); s != "" {
		v, err := time.ParseDuration(s)
		if err != nil || v <= 0 {
			b.Fatalf("LAB_FLOOD=%q: want a duration like 30s", s)
		}
		d = v
	}
	for _, flood := range []bool{false, true} {
		name := "quiet"
		if flood {
			name = "flood"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				runRelayFlood(b, d, flood)
			}
		})
	}
}

func runRelayFlood(b *testing.B, d time.Duration, flood bool) {
	loopback := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}
	port, err := net.ListenUDP("udp", loopback)
	if err != nil {
		b.Fatal(err)
	}
	srv := New(Config{})
	served := make(chan error, 1)
	go func() { served <- srv.ServeUDP(port) }()
	defer func() { srv.Close(); <-served }()
	id := sessionID(7)
	srv.Register(id)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	peer := func(role Role) *Conn {
		pc, err := net.ListenUDP("udp", loopback)
		if err != nil {
			b.Fatal(err)
		}
		c, err := Bind(ctx, pc, port.LocalAddr(), id, role)
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	agent, viewer := peer(Agent), peer(Viewer)
	defer agent.Close()
	defer viewer.Close()

	var heap0 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&heap0)

	// The viewer echoes; the agent stamps, sends and records round trips.
	go func() {
		buf := make([]byte, 2048)
		for {
			n, _, err := viewer.ReadFrom(buf)
			if err != nil {
				return
			}
			viewer.WriteTo(buf[:n], nil)
		}
	}()
	var (
		mu  sync.Mutex
		rtt []time.Duration
	)
	base := time.Now()
	recvDone := make(chan struct{})
	go func() {
		defer close(recvDone)
		buf := make([]byte, 2048)
		for {
			n, _, err := agent.ReadFrom(buf)
			if err != nil {
				return
			}
			if n >= 9 {
				sent := time.Duration(binary.LittleEndian.Uint64(buf[1:]))
				mu.Lock()
				rtt = append(rtt, time.Since(base)-sent)
				mu.Unlock()
			}
		}
	}()

	var flooded atomic.Int64
	stop := make(chan struct{})
	floodDone := make(chan struct{})
	if flood {
		go floodRelay(b, port.LocalAddr().(*net.UDPAddr), id, stop, floodDone, &flooded)
	} else {
		close(floodDone)
	}

	ping := quicLike(200, 1)
	tick := time.NewTicker(time.Millisecond)
	start := time.Now()
	sent := 0
	for time.Since(start) < d {
		<-tick.C
		binary.LittleEndian.PutUint64(ping[1:], uint64(time.Since(base)))
		if _, err := agent.WriteTo(ping, nil); err != nil {
			b.Fatal(err)
		}
		sent++
	}
	tick.Stop()
	elapsed := time.Since(start)
	close(stop)
	<-floodDone
	time.Sleep(100 * time.Millisecond) // the last echoes: a benchmark's grace, not a test's wait
	agent.Close()
	<-recvDone

	runtime.GC()
	var heap1 runtime.MemStats
	runtime.ReadMemStats(&heap1)
	mu.Lock()
	defer mu.Unlock()
	if len(rtt) == 0 {
		b.Fatal("no echo came back")
	}
	slices.Sort(rtt)
	q := func(p float64) time.Duration { return rtt[int(p*float64(len(rtt)-1))] }
	st := srv.Stats()
	floodRan(b, d, elapsed, sent, flood, flooded.Load())
	b.ReportMetric(float64(q(0.5))/2/1e3, "one-way-p50-µs")
	b.ReportMetric(float64(q(0.99))/2/1e3, "one-way-p99-µs")
	b.ReportMetric(100*float64(sent-len(rtt))/float64(sent), "pings-lost-%")
	b.ReportMetric(float64(flooded.Load())/elapsed.Seconds(), "flood-datagrams/s")
	drops := st.Drops()
	for _, r := range DropReasons {
		b.ReportMetric(float64(drops[r]), "drop-"+string(r))
	}
	b.ReportMetric(float64(heap0.HeapInuse)/(1<<20), "heap-before-MiB")
	b.ReportMetric(float64(heap1.HeapInuse)/(1<<20), "heap-after-MiB")
}

// floodPerSecond is the flood's rate, in datagrams.
const floodPerSecond = 100_000

// floodRan fails the benchmark unless the run was what it names: d of
// pings at one a millisecond, and with the flood, floodPerSecond datagrams
// a second sent at the relay, each within 10%. A ticker that drops ticks
// on a busy machine, or a flood sender that cannot keep up, measures a
// lighter load than the figures say.
func floodRan(b *testing.B, d, elapsed time.Duration, pings int, flood bool, flooded int64) {
	b.Helper()
	if want := float64(d / time.Millisecond); float64(pings) < 0.9*want || float64(pings) > 1.1*want {
		b.Errorf("the session sent %d pings in %v, want %.0f (one a millisecond) within 10%%: a ticker drops the ticks of a process that is late, as on a busy machine", pings, elapsed.Round(time.Millisecond), want)
	}
	if !flood {
		return
	}
	if got := float64(flooded) / elapsed.Seconds(); got < 0.9*floodPerSecond || got > 1.1*floodPerSecond {
		b.Errorf("the flood sent %.0f datagrams a second, want %d within 10%%", got, floodPerSecond)
	}
}

// floodRelay sends floodPerSecond datagrams a second at the relay from 64
// unregistered ports until stop: random bytes, truncated bind messages and
// replays of a datagram the session sends, a third each.
func floodRelay(b *testing.B, relay *net.UDPAddr, id SessionID, stop <-chan struct{}, done chan<- struct{}, count *atomic.Int64) {
	defer close(done)
	const batch = 50
	rng := rand.New(rand.NewPCG(1, 2))
	var conns []*ipv4.PacketConn
	for range 64 {
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			b.Error(err)
			return
		}
		defer c.Close()
		conns = append(conns, ipv4.NewPacketConn(c))
	}
	bind := control{typ: msgBind, session: id, role: Agent}.appendTo(nil)
	replay := quicLike(200, 1)
	msgs := make([]ipv4.Message, batch)
	for i := range msgs {
		var p []byte
		switch i % 3 {
		case 0:
			p = make([]byte, 1+rng.IntN(1200))
			for j := range p {
				p[j] = byte(rng.Uint32())
			}
		case 1:
			p = bind[:1+rng.IntN(len(bind)-1)]
		default:
			p = replay
		}
		msgs[i] = ipv4.Message{Buffers: [][]byte{p}, Addr: relay}
	}
	every := time.Duration(batch) * time.Second / floodPerSecond
	start := time.Now()
	for k := 0; ; k++ {
		select {
		case <-stop:
			return
		default:
		}
		if wait := time.Until(start.Add(time.Duration(k) * every)); wait > 0 {
			time.Sleep(wait)
		}
		n, err := conns[k%len(conns)].WriteBatch(msgs, 0)
		if err != nil {
			continue // a full socket buffer: the flood is best effort
		}
		count.Add(int64(n))
	}
}
