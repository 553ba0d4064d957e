package netem

import (
	"bufio"
	"bytes"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/ipv4"
)

// BenchmarkProxySoak runs the real-time proxy for a long time at 90% of
// the rate it was just measured to carry, and reports whether anything
// grows or goes missing:
//
//	LAB_SOAK=10m go test ./netem -run '^$' -bench ProxySoak -benchtime 1x -cpu 1
//
// It first measures the proxy's maximum for 3 s (as BenchmarkProxyThroughput
// does: never more than a socket buffer's worth ahead of the proxy), then
// sends 1200-byte datagrams at 90% of it, paced in batches and with the
// same guard, for LAB_SOAK (default 30 s). Reported: the rates (the soak's
// falls short of its target only if the proxy cannot keep up), the loss
// (zero without impairments),
// and the process's resident memory and goroutines at the soak's start and
// end (sender, proxy and receiver share the process; flat within 10% is the
// goal). Figures, with one check of what they name: the soak ran for
// LAB_SOAK at its target within 10% (soakRan); below that it measured a
// proxy that could not keep up, not one soaked at 90% of its maximum.
func BenchmarkProxySoak(b *testing.B) {
	soak := 30 * time.Second
	if s := os.Getenv("LAB_SOAK"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			b.Fatalf("LAB_SOAK=%q: want a duration like 10m", s)
		}
		soak = d
	}
	const size = 1200
	for b.Loop() {
		r := newSoakRig(b)
		maxBps := r.calibrate(b, 3*time.Second, size)
		target := 0.9 * maxBps
		runtime.GC()
		rss0, g0 := residentBytes(), runtime.NumGoroutine()
		fwd0, _ := r.p.Stats()
		sent, elapsed := r.paced(b, target, soak, size)
		got := r.settle(sent, 500*time.Millisecond)
		fwd1, _ := r.p.Stats()
		soakRan(b, target, soak, sent, elapsed, size)
		runtime.GC()
		rss1, g1 := residentBytes(), runtime.NumGoroutine()
		b.ReportMetric(maxBps/1e9, "max-Gbit/s")
		b.ReportMetric(float64(sent*size*8)/elapsed.Seconds()/1e9, "soak-Gbit/s")
		b.ReportMetric(100*float64(sent-got)/float64(sent), "lost-%")
		// Where: the proxy read fewer than were sent (its socket
		// overflowed), or its link or write dropped some.
		b.ReportMetric(100*float64(sent-int64(fwd1.Offered.Packets-fwd0.Offered.Packets))/float64(sent), "unread-by-proxy-%")
		b.ReportMetric(float64(fwd1.DroppedTotal().Packets-fwd0.DroppedTotal().Packets), "dropped-by-proxy")
		b.ReportMetric(float64(rss0)/(1<<20), "rss-start-MiB")
		b.ReportMetric(float64(rss1)/(1<<20), "rss-end-MiB")
		b.ReportMetric(float64(g0), "goroutines-start")
		b.ReportMetric(float64(g1), "goroutines-end")
		b.ReportMetric(elapsed.Seconds(), "soak-s")
	}
}

// soakRan fails the benchmark unless the soak sent for d at target
// within 10%: its figures are then a soak's at the rate it names.
func soakRan(b *testing.B, target float64, d time.Duration, sent int64, elapsed time.Duration, size int) {
	b.Helper()
	if elapsed < d {
		b.Errorf("the soak sent for %v of its %v", elapsed.Round(time.Millisecond), d)
	}
	if got := float64(sent*int64(size)*8) / elapsed.Seconds(); got < 0.9*target || got > 1.1*target {
		b.Errorf("the soak sent %.3f Gbit/s, want its target %.3f within 10%% (90%% of the maximum measured just before)", got/1e9, target/1e9)
	}
}

// soakRig is a sender, a proxy and a receiver that only counts.
type soakRig struct {
	p        *Proxy
	send     *net.UDPConn
	recv     *net.UDPConn
	received atomic.Int64
	done     chan struct{}
}

func newSoakRig(b *testing.B) *soakRig {
	b.Helper()
	send, p, recv, closeAll := newProxyLoop(b, nil)
	r := &soakRig{p: p, send: send, recv: recv, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		pc := ipv4.NewPacketConn(recv)
		msgs := make([]ipv4.Message, proxyBatch)
		for i := range msgs {
			msgs[i].Buffers = [][]byte{make([]byte, maxUDPPayload)}
		}
		for {
			n, err := pc.ReadBatch(msgs, 0)
			if err != nil {
				return
			}
			r.received.Add(int64(n))
		}
	}()
	b.Cleanup(func() {
		closeAll()
		<-r.done
	})
	return r
}

// offered is how many datagrams the proxy has read.
func (r *soakRig) offered() int64 {
	l := r.p.fwd
	l.mu.Lock()
	defer l.mu.Unlock()
	return int64(l.stats.Offered.Packets)
}

// calibrate sends as fast as the proxy reads, never more than 512
// datagrams ahead of it, for d, and returns the rate that arrived.
func (r *soakRig) calibrate(b *testing.B, d time.Duration, size int) float64 {
	pc := ipv4.NewPacketConn(r.send)
	msgs := batchOf(size)
	r0 := r.received.Load()
	start := time.Now()
	var sent int64
	for time.Since(start) < d {
		r.waitForProxy(sent)
		sent += r.write(b, pc, msgs)
	}
	r.settle(r0+sent, 200*time.Millisecond)
	return float64((r.received.Load()-r0)*int64(size)*8) / time.Since(start).Seconds()
}

// waitForProxy holds the sender while the proxy has read fewer than
// sent-512 datagrams in all (sent counts from the rig's start), so that what is measured is what the proxy forwards,
// not what the kernel drops from an overrun socket buffer (512 datagrams
// of 1200 bytes take about 1.2 MB of the proxy's 4 MB).
func (r *soakRig) waitForProxy(sent int64) {
	for r.offered() < sent-512 {
		// Park rather than yield: a goroutine that only yields keeps the
		// scheduler from polling the network, which is how the proxy
		// hears of its datagrams.
		time.Sleep(20 * time.Microsecond)
	}
}

// paced sends at bps for d, a batch at a time on a schedule, never more
// than the proxy can take (waitForProxy); a batch that is late goes at
// once, so the average holds when a sleep overshoots, and falls short of
// bps only when the proxy cannot keep up.
func (r *soakRig) paced(b *testing.B, bps float64, d time.Duration, size int) (sent int64, elapsed time.Duration) {
	pc := ipv4.NewPacketConn(r.send)
	msgs := batchOf(size)
	every := time.Duration(float64(proxyBatch*size*8) / bps * float64(time.Second))
	r.received.Store(0)  // the calibration has settled: count the soak's datagrams only
	read0 := r.offered() // what the proxy read during the calibration
	start := time.Now()
	for k := int64(0); ; k++ {
		due := start.Add(time.Duration(k) * every)
		if due.Sub(start) >= d {
			break
		}
		if wait := time.Until(due); wait > 0 {
			time.Sleep(wait)
		}
		r.waitForProxy(read0 + sent)
		sent += r.write(b, pc, msgs)
	}
	return sent, time.Since(start)
}

// write sends a batch and returns how many went: sendmmsg may send fewer
// than asked when the socket's buffer is full, and those never left.
func (r *soakRig) write(b *testing.B, pc *ipv4.PacketConn, msgs []ipv4.Message) int64 {
	n, err := pc.WriteBatch(msgs, 0)
	if err != nil {
		b.Fatal(err)
	}
	return int64(n)
}

// settle waits until n datagrams have arrived or none came for idle.
func (r *soakRig) settle(n int64, idle time.Duration) int64 {
	last, lastN := time.Now(), int64(-1)
	for {
		got := r.received.Load()
		if got >= n {
			return got
		}
		if got != lastN {
			last, lastN = time.Now(), got
		} else if time.Since(last) > idle {
			return got
		}
		time.Sleep(10 * time.Millisecond) // polling a counter, bounded by idle
	}
}

func batchOf(size int) []ipv4.Message {
	msgs := make([]ipv4.Message, proxyBatch)
	for i := range msgs {
		msgs[i].Buffers = [][]byte{make([]byte, size)}
	}
	return msgs
}

// residentBytes is the process's resident set (VmRSS), or 0 where
// /proc/self/status does not exist.
func residentBytes() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmRSS:")); ok {
			kb, err := strconv.ParseInt(string(bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(v), []byte("kB")))), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}
