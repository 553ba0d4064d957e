package netem

import (
	"encoding/binary"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/ipv4"
)

// The proxy's timing goals are measured here, never asserted in tests:
//
//	go test ./netem -run '^$' -bench 'ProxyOneWayDelay|ProxyRate' -benchtime=2000x
//	go test ./netem -run '^$' -bench ProxyThroughput -benchtime=300000x -cpu 1,2
//
// Sender, proxy and receiver share the process, so every timestamp comes from
// one monotonic clock. The one-way delay error is bounded below by the Link's
// timer: Go's runtime timers wake an idle process through epoll_wait with a
// timeout in whole milliseconds, so a delivery can be up to 1 ms late.

// proxyBenchRig is a sender connected to a proxy whose target is a receiver
// recording each datagram's arrival.
type proxyBenchRig struct {
	p    *Proxy
	send *net.UDPConn
	recv *net.UDPConn
	base time.Time

	mu sync.Mutex
	// arrivals are kept in chunks: growing one slice would copy it all
	// now and then, and the receiver would fall behind a burst.
	arrivals [][]proxyBenchArrival
	count    int
	progress *sync.Cond // signalled when arrivals grow
	done     chan struct{}
}

type proxyBenchArrival struct {
	sent, at time.Duration // since base
	size     int
}

// newProxyLoop is a receiver on loopback, a proxy whose forward link has
// fwd in front of it, and a sender connected to the proxy, all with big
// socket buffers. closeAll closes them, sender first; a rig then waits for
// its receiving goroutine.
func newProxyLoop(b *testing.B, fwd []Impairment) (send *net.UDPConn, p *Proxy, recv *net.UDPConn, closeAll func()) {
	b.Helper()
	recv, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	setBuffers(recv)
	proxyBenchBigBuffer(recv)
	p, err = NewProxy(ProxyConfig{Target: recv.LocalAddr().String(), Forward: LinkConfig{Impairments: fwd}})
	if err != nil {
		b.Fatal(err)
	}
	send, err = net.DialUDP("udp", nil, p.Addr().(*net.UDPAddr))
	if err != nil {
		b.Fatal(err)
	}
	setBuffers(send)
	return send, p, recv, func() {
		send.Close()
		p.Close()
		recv.Close()
	}
}

func newProxyBenchRig(b *testing.B, fwd []Impairment) *proxyBenchRig {
	b.Helper()
	send, p, recv, closeAll := newProxyLoop(b, fwd)
	r := &proxyBenchRig{p: p, send: send, recv: recv, base: time.Now(), done: make(chan struct{})}
	r.progress = sync.NewCond(&r.mu)
	go r.receive()
	b.Cleanup(func() {
		closeAll()
		<-r.done
	})
	return r
}

// receive records arrivals, reading in batches so that the receiver costs
// the machine as little as possible next to the proxy.
func (r *proxyBenchRig) receive() {
	defer close(r.done)
	pc := ipv4.NewPacketConn(r.recv)
	msgs := make([]ipv4.Message, proxyBatch)
	for i := range msgs {
		msgs[i].Buffers = [][]byte{make([]byte, maxUDPPayload)}
	}
	for {
		n, err := pc.ReadBatch(msgs, 0)
		at := time.Since(r.base)
		if err != nil {
			return
		}
		r.mu.Lock()
		for _, m := range msgs[:n] {
			sent := time.Duration(binary.LittleEndian.Uint64(m.Buffers[0]))
			last := len(r.arrivals) - 1
			if last < 0 || len(r.arrivals[last]) == cap(r.arrivals[last]) {
				r.arrivals = append(r.arrivals, make([]proxyBenchArrival, 0, 1<<14))
				last++
			}
			r.arrivals[last] = append(r.arrivals[last], proxyBenchArrival{sent: sent, at: at, size: m.N})
		}
		r.count += n
		r.progress.Broadcast()
		r.mu.Unlock()
	}
}

// write sends buf stamped with the current instant.
func (r *proxyBenchRig) write(b *testing.B, buf []byte) {
	binary.LittleEndian.PutUint64(buf, uint64(time.Since(r.base)))
	if _, err := r.send.Write(buf); err != nil {
		b.Fatal(err)
	}
}

// waitUntil blocks until ok holds or a second has passed (so that the
// sender never stalls for good). It checks ok whenever datagrams arrive and
// every 100 µs (in practice the runtime's timer granularity), since the
// proxy's progress, unlike the receiver's, signals nothing.
func (r *proxyBenchRig) waitUntil(ok func() bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	deadline := time.Now().Add(time.Second)
	for !ok() && time.Now().Before(deadline) {
		t := time.AfterFunc(100*time.Microsecond, func() {
			r.mu.Lock()
			r.progress.Broadcast()
			r.mu.Unlock()
		})
		r.progress.Wait()
		t.Stop()
	}
}

// offered is how many datagrams the proxy has read and sent into its
// forward link.
func (r *proxyBenchRig) offered() int {
	l := r.p.fwd
	l.mu.Lock()
	defer l.mu.Unlock()
	return int(l.stats.Offered.Packets)
}

// wait returns the arrivals once n have come or nothing has come for idle.
func (r *proxyBenchRig) wait(n int, idle time.Duration) []proxyBenchArrival {
	last, lastN := time.Now(), -1
	for {
		r.mu.Lock()
		got := r.count
		r.mu.Unlock()
		if got >= n {
			break
		}
		if got != lastN {
			last, lastN = time.Now(), got
		} else if time.Since(last) > idle {
			break
		}
		time.Sleep(time.Millisecond) // a benchmark may poll; tests may not
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Concat(r.arrivals...)
}

func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// BenchmarkProxyOneWayDelay measures how far the one-way delay through the
// proxy strays from a configured 25 ms: one packet per op, 1 ms apart.
// Goal: p50 < 100 µs, p99 < 500 µs.
func BenchmarkProxyOneWayDelay(b *testing.B) {
	const delay = 25 * time.Millisecond
	r := newProxyBenchRig(b, []Impairment{&Delay{Delay: delay}})
	buf := make([]byte, 200)
	sent := 0
	next := time.Now()
	for b.Loop() {
		next = next.Add(time.Millisecond)
		time.Sleep(time.Until(next))
		r.write(b, buf)
		sent++
	}
	got := r.wait(sent, time.Second)
	errs := make([]time.Duration, len(got))
	for i, a := range got {
		errs[i] = a.at - a.sent - delay
	}
	slices.Sort(errs)
	b.ReportMetric(float64(quantile(errs, 0.5))/1e3, "p50-err-µs")
	b.ReportMetric(float64(quantile(errs, 0.99))/1e3, "p99-err-µs")
	b.ReportMetric(float64(quantile(errs, 1))/1e3, "max-err-µs")
	if len(errs) > 0 {
		b.ReportMetric(float64(errs[0])/1e3, "min-err-µs")
	}
	b.ReportMetric(float64(sent-len(got)), "lost")
}

// BenchmarkProxyRate measures the rate a Rate bottleneck achieves through the
// proxy, driven 5 % above its capacity with 1200-byte datagrams (one per op).
// Goal: within 1 % of the configured rate.
func BenchmarkProxyRate(b *testing.B) {
	for _, rate := range []int64{5e6, 100e6} {
		b.Run(strconv.FormatInt(rate/1e6, 10)+"Mbit", func(b *testing.B) {
			r := newProxyBenchRig(b, []Impairment{&Rate{Rate: rate}})
			const size = 1200
			buf := make([]byte, size)
			// The sender starts 20 ms of traffic ahead and sends 5 % faster
			// than the bottleneck (in bursts, as its sleeps are coarse and
			// may be late), so the queue never runs dry.
			const lead = 20 * time.Millisecond
			start := time.Now()
			perPacket := time.Duration(float64(size*8) / (1.05 * float64(rate)) * 1e9)
			sent := 0
			for b.Loop() {
				if ahead := time.Until(start.Add(time.Duration(sent)*perPacket - lead)); ahead > time.Millisecond {
					time.Sleep(ahead)
				}
				r.write(b, buf)
				sent++
			}
			// What it names is the bottleneck's rate: a sender that fell
			// behind it (a busy machine) leaves the queue empty, and the
			// slope below is then the sender's rate, not the bottleneck's.
			if offered := float64(sent*size*8) / time.Since(start).Seconds(); offered < float64(rate) {
				b.Errorf("the sender offered %.2f Mbit/s, under the bottleneck's %d: the rate measured would be the sender's", offered/1e6, rate/1e6)
			}
			// The backlog drains at the configured rate: 5 % of the run.
			got := r.wait(sent, time.Second+time.Since(start)/10)
			if len(got) < 2 {
				b.Skip("too few packets to measure a rate; raise -benchtime")
			}
			// The slope of a least-squares fit of arrival instants against
			// bits sent: unlike (last-first)/bits, it does not hang on the
			// timing of two packets.
			var mx, my float64
			for i, a := range got {
				mx += float64(i * size * 8)
				my += a.at.Seconds()
			}
			mx /= float64(len(got))
			my /= float64(len(got))
			var sxy, sxx float64
			for i, a := range got {
				dx := float64(i*size*8) - mx
				sxy += dx * (a.at.Seconds() - my)
				sxx += dx * dx
			}
			achieved := sxx / sxy // bits per second
			b.ReportMetric(achieved/1e6, "Mbit/s")
			b.ReportMetric(100*(achieved-float64(rate))/float64(rate), "err-%")
			b.ReportMetric(float64(sent-len(got)), "lost")
		})
	}
}

// BenchmarkProxyThroughput measures the proxy's maximum forwarding rate of
// 1200-byte datagrams (one per op). The sender writes batches, but never
// more than proxyBenchBacklog datagrams ahead of what the proxy has read:
// the rate it reaches is what the proxy sustains without loss, not how fast
// the kernel drops an overload.
// Goal: at least 1 Gbit/s on one core (-cpu=1, where sender, proxy and
// receiver share the core). The gso cases send each batch as one UDP_SEGMENT
// message, as quic-go does where the kernel offers it: the proxy then reads
// coalesced messages (GRO) instead of one datagram per message.
func BenchmarkProxyThroughput(b *testing.B) {
	// 512 datagrams of 1200 bytes take about 1.2 MB of socket buffer
	// (the kernel counts ~2.3 KB each), well inside the proxy's 4 MB.
	const proxyBenchBacklog = 512
	for _, tc := range []struct {
		name string
		imps []Impairment
		gso  bool
	}{
		{"none", nil, false},
		{"delay25ms", []Impairment{&Delay{Delay: 25 * time.Millisecond}}, false},
		{"gso-client/none", nil, true},
		{"gso-client/delay25ms", []Impairment{&Delay{Delay: 25 * time.Millisecond}}, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			r := newProxyBenchRig(b, tc.imps)
			const size = 1200
			if tc.gso && !gsoSupported(r.send) {
				b.Skip("the kernel does not offer UDP GSO")
			}
			pc := ipv4.NewPacketConn(r.send)
			msgs := make([]ipv4.Message, proxyBatch)
			for i := range msgs {
				msgs[i].Buffers = [][]byte{make([]byte, size)}
			}
			// A batch's worth of datagrams, for the kernel to segment.
			burst := make([]byte, proxyBatch*size)
			oob := appendSegmentCmsg(nil, size)
			b.SetBytes(size)
			sent := 0
			start := time.Since(r.base)
			for b.Loop() {
				if sent%proxyBatch == proxyBatch-1 {
					r.waitUntil(func() bool { return r.offered() >= sent-proxyBenchBacklog })
					var err error
					if tc.gso {
						_, _, err = r.send.WriteMsgUDP(burst, oob, nil)
					} else {
						_, err = pc.WriteBatch(msgs, 0)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				sent++
			}
			sent -= sent % proxyBatch
			got := r.wait(sent, 500*time.Millisecond)
			b.StopTimer()
			if len(got) == 0 {
				b.Fatal("nothing arrived")
			}
			elapsed := (got[len(got)-1].at - start).Seconds()
			b.ReportMetric(float64(len(got)*size*8)/elapsed/1e9, "Gbit/s")
			b.ReportMetric(float64(len(got))/elapsed, "pkt/s")
			b.ReportMetric(100*float64(sent-len(got))/float64(sent), "lost-%")
		})
	}
}
