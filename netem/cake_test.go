package netem

import (
	"net"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// hostsArrival is one packet of the host-fairness load: flow f of host A
// (f < 8) or host B's only flow (f == 8).
type hostsArrival struct {
	at   time.Duration
	flow int
}

// hostsPacket is flow's 1500-byte packet: host A is 10.0.0.1, host B
// 10.0.0.3, both on the LAN side; each flow reaches a server of its own
// (192.0.2.1-9) when farApart, else one server, 192.0.2.100.
func hostsPacket(flow int, farApart bool) *Packet {
	src := net.IPv4(10, 0, 0, 1)
	if flow == 8 {
		src = net.IPv4(10, 0, 0, 3)
	}
	dst := net.IPv4(192, 0, 2, 100)
	if farApart {
		dst = net.IPv4(192, 0, 2, byte(1+flow))
	}
	return &Packet{Data: make([]byte, 1500),
		From: &net.UDPAddr{IP: src, Port: 5000 + flow},
		To:   &net.UDPAddr{IP: dst, Port: 443}}
}

// hostBShare runs host A's 8 unresponsive bulk flows (2 Mbit/s each) and
// host B's one (6 Mbit/s) up through a 10 Mbit/s link with queue q, in
// virtual time, and returns the bytes of B's flow and of all flows
// delivered in [2 s, 10 s). Every flow offers more than it can get
// (FQ-CoDel gives each 1/9 of the link, host fairness B half), so every
// flow queue stays backlogged and the shares are DRR's alone.
func hostBShare(t *testing.T, q QueueLimit, farApart bool) (b, all int) {
	t.Helper()
	const rate = 10_000_000
	var arr []hostsArrival
	for f := range 9 {
		gap := 6 * time.Millisecond // 1500 B: 2 Mbit/s
		if f == 8 {
			gap = 2 * time.Millisecond // 6 Mbit/s
		}
		for at := time.Duration(0); at < 10*time.Second; at += gap {
			arr = append(arr, hostsArrival{at: at, flow: f})
		}
	}
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var mu sync.Mutex
		l, err := NewLink(LinkConfig{Name: "hosts", Impairments: []Impairment{&Rate{Rate: rate, Queue: q}}}, func(p *Packet) {
			mu.Lock()
			defer mu.Unlock()
			if at := time.Since(start); at >= 2*time.Second && at < 10*time.Second {
				all += p.Size()
				if p.From.(*net.UDPAddr).Port == 5008 {
					b += p.Size()
				}
			}
		})
		require.NoError(t, err)
		// The arrivals in time order: every flow's packets are on a
		// grid of 2 ms, so step through it.
		for step := time.Duration(0); step < 10*time.Second; step += 2 * time.Millisecond {
			time.Sleep(start.Add(step).Sub(time.Now()))
			for _, a := range arr {
				if a.at == step {
					require.NoError(t, l.Send(hostsPacket(a.flow, farApart)))
				}
			}
		}
		time.Sleep(time.Until(start.Add(10 * time.Second)))
		require.NoError(t, l.Close())
	})
	return b, all
}

func TestCakeSharesBetweenHostsFirst(t *testing.T) {
	// The link carries exactly rate x 8 s in the window; the expected
	// shares follow from the quanta. FQ-CoDel: every flow's quantum is
	// 1514 B, so host B's one flow gets 1/9. CAKE-like, sharing between
	// the hosts that have A's eight flows and B's one: A's flows get
	// 1514/8 = 189 B a round each, B's 1514, so B gets
	// 1514/(1514+8x189) = 50.03%. A packet either way is the error DRR
	// allows (a flow is at most one packet and one quantum off its share)
	// and the window's edges.
	const linkBytes = 10_000_000 / 8 * 8
	q := DefaultFQCoDelQuantum
	flowsShare := float64(linkBytes) / 9
	hostsShare := float64(linkBytes) * float64(q) / float64(q+8*(q/8))
	fq := &FQCoDelParams{Limit: 2000}
	cake := func(h CakeHosts) *CakeParams { return &CakeParams{FQCoDelParams: *fq, Hosts: h} }
	for _, c := range []struct {
		name     string
		q        QueueLimit
		farApart bool
		want     float64
	}{
		{"fq_codel", QueueLimit{FQCoDel: fq}, true, flowsShare},
		// Up from the LAN: the sources are the LAN's hosts.
		{"dual-srchost", QueueLimit{Cake: cake(CakeDualSrcHost)}, true, hostsShare},
		// triple-isolate takes the larger of the two hosts' loads:
		// with a server per flow, the sources'.
		{"triple-isolate", QueueLimit{Cake: cake(CakeTripleIsolate)}, true, hostsShare},
		// Sharing between destinations that have a flow each is
		// sharing between flows.
		{"dual-dsthost", QueueLimit{Cake: cake(CakeDualDstHost)}, true, flowsShare},
		// All nine flows to one server: its load of nine is the larger,
		// every flow gets 1514/9, and triple-isolate is fair per flow.
		{"triple-isolate one server", QueueLimit{Cake: cake(CakeTripleIsolate)}, false, flowsShare},
		{"dual-srchost one server", QueueLimit{Cake: cake(CakeDualSrcHost)}, false, hostsShare},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, all := hostBShare(t, c.q, c.farApart)
			t.Logf("host B: %d of %d bytes (%.2f%%), expected %.0f", b, all, 100*float64(b)/float64(all), c.want)
			require.InDelta(t, linkBytes, all, 1500, "the link kept full")
			require.InDelta(t, c.want, b, 2*1500)
		})
	}
}

func TestCakeModesValidate(t *testing.T) {
	for i, name := range CakeModes {
		require.Equal(t, name, CakeHosts(i).String())
		require.NoError(t, (&CakeParams{Hosts: CakeHosts(i)}).Validate())
	}
	require.Error(t, (&CakeParams{Hosts: CakeHosts(len(CakeModes))}).Validate())
	require.Error(t, (&QueueLimit{Cake: &CakeParams{}, FQCoDel: &FQCoDelParams{}}).Validate(), "one queue management")
	require.Error(t, (&QueueLimit{Cake: &CakeParams{}, Delay: time.Second}).Validate(), "no delay limit")
	require.NoError(t, (&QueueLimit{Cake: &CakeParams{}, Bytes: 256 << 10}).Validate())
	require.Error(t, (&QueueLimit{DualPI2: &DualPI2Params{}, Bytes: 256 << 10}).Validate())
}

func TestFQCoDelMemoryLimitDropsFromTheFattestFlow(t *testing.T) {
	// A byte limit (the queue's bytes, Linux's memory_limit) of 10 kB:
	// flow 1's 8 kB and flow 2's 3 x 1000 B break it at the third of
	// flow 2's packets, and the drop is from flow 1, the fattest.
	for _, q := range []schedQueue{
		newFQCoDel(FQCoDelParams{Memory: 10_000}),
		newCake(CakeParams{FQCoDelParams: FQCoDelParams{Memory: 10_000}}),
	} {
		for i := range 8 {
			q.enqueue(schedPacket(schedArrival{Flow: 1, Size: 1000}), t0.Add(time.Duration(i)))
		}
		for i := range 2 {
			q.enqueue(schedPacket(schedArrival{Flow: 2, Size: 1000}), t0.Add(time.Duration(10+i)))
		}
		overflow, _ := q.drops()
		require.Empty(t, overflow, "10 kB fit")
		q.enqueue(schedPacket(schedArrival{Flow: 2, Size: 1000}), t0.Add(20))
		overflow, _ = q.drops()
		require.Len(t, overflow, 1)
		require.Equal(t, 5001, overflow[0].From.(*net.UDPAddr).Port, "from the fattest flow, not the arrival's")
	}
}

func TestCakeForgetsAHostsFlowsThatEnded(t *testing.T) {
	// Bursts, all ECN-capable so that CoDel marks and drops nothing. At
	// 0, host A has 8 flows of 30 packets and host B one of 1000; at
	// 800 ms, when A's bursts have long gone, A's flow 0 sends 300 more.
	// The bursts arrive all at once, so the flows become bulk only by
	// using a quantum with packets left. From 100 ms to 300 ms (A's
	// bursts not over, the first rounds past) B gets 1/9 of the link
	// under FQ-CoDel, 1514/(1514+8x189) under the CAKE-like queue. From
	// 900 ms to 1100 ms A counts one bulk flow, not nine: A and B share
	// the link half and half (quanta of 1514 B each), where a count that
	// kept A's ended flows would give A 1514/8 B a round, 11%.
	var arr []schedArrival
	for f := range 8 {
		arr = append(arr, schedEvery(f, 1500, ECT0, time.Nanosecond, 0, 30*time.Nanosecond)...)
	}
	b := schedEvery(8, 1500, ECT0, time.Nanosecond, 0, 1000*time.Nanosecond)
	for i := range b {
		b[i].Host = 2
	}
	arr = append(append(arr, b...), schedEvery(0, 1500, ECT0, time.Nanosecond, 800*time.Millisecond, 800*time.Millisecond+300*time.Nanosecond)...)
	const perPacket = 1500 * 8 * time.Second / 10_000_000
	for _, c := range []struct {
		name   string
		q      schedUnderTest
		shareB float64 // while A's 8 bursts last
	}{
		{"fq_codel", newFQCoDel(FQCoDelParams{}), 1. / 9},
		{"cake", newCake(CakeParams{Hosts: CakeDualSrcHost}), 1514. / (1514 + 8*189)},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := schedRun(c.q, slices.Clone(arr), 10_000_000, 1200*time.Millisecond)
			count := func(from, to time.Duration) (a, b int) {
				for _, o := range out {
					if o.Left > from && o.Left <= to {
						if o.Flow == 8 {
							b++
						} else {
							a++
						}
					}
				}
				return a, b
			}
			a1, b1 := count(100*time.Millisecond, 300*time.Millisecond)
			a2, b2 := count(900*time.Millisecond, 1100*time.Millisecond)
			t.Logf("100-300 ms: A %d, B %d; 900-1100 ms: A %d, B %d", a1, b1, a2, b2)
			require.InDelta(t, 200*time.Millisecond/perPacket, a1+b1, 1)
			// A's flows started together and send in the same rounds,
			// eight packets at once: a window's edges may cut a round.
			require.InDelta(t, c.shareB*float64(a1+b1), b1, 4)
			require.InDelta(t, 200*time.Millisecond/perPacket, a2+b2, 1)
			require.InDelta(t, a2, b2, 2, "one flow each, one quantum each")
		})
	}
}

func TestCakeNewFlowGetsItsHostsShareOfARound(t *testing.T) {
	// Host A has 8 bulk flows (quanta of 1514/8 = 189 B); a new flow of
	// A's arrives with two 700-byte packets. It goes first, as any new
	// flow, but with its host's share of a round, 189 B: the second
	// packet waits for the old flows' round. Under FQ-CoDel its 1514 B
	// send both at once.
	for _, c := range []struct {
		name     string
		q        schedUnderTest
		together bool
	}{
		{"fq_codel", newFQCoDel(FQCoDelParams{}), true},
		{"cake", newCake(CakeParams{}), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var arr []schedArrival
			for f := range 8 {
				arr = append(arr, schedEvery(f, 1500, ECT0, time.Nanosecond, 0, 100*time.Nanosecond)...)
			}
			arr = append(arr, schedEvery(9, 700, ECT0, time.Nanosecond, 100*time.Millisecond, 100*time.Millisecond+2*time.Nanosecond)...)
			out := schedRun(c.q, arr, 10_000_000, 200*time.Millisecond)
			i := slices.IndexFunc(out, func(o schedOut) bool { return o.Flow == 9 })
			require.GreaterOrEqual(t, i, 0)
			require.Less(t, i+1, len(out))
			t.Logf("the new flow's packets leave %d and %d", i, i+1+slices.IndexFunc(out[i+1:], func(o schedOut) bool { return o.Flow == 9 }))
			require.Equal(t, c.together, out[i+1].Flow == 9)
		})
	}
}

func TestQueueBytesBoundFQCoDelAndCake(t *testing.T) {
	// The queue's bytes are the byte limit of FQ-CoDel and the CAKE-like
	// queue (their Memory left out): 20 packets of 1000 B at once into a
	// 10 kB queue at 1 Mbit/s. The first leaves for the wire at once, ten
	// more fill the queue, nine are dropped on overflow; without the
	// limit none is (ECN-capable, so that CoDel marks rather than drops).
	for _, c := range []struct {
		name    string
		q       QueueLimit
		dropped int
	}{
		{"fq_codel", QueueLimit{Bytes: 10_000, FQCoDel: &FQCoDelParams{}}, 9},
		{"cake", QueueLimit{Bytes: 10_000, Cake: &CakeParams{}}, 9},
		{"unlimited", QueueLimit{FQCoDel: &FQCoDelParams{}}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l, err := NewLink(LinkConfig{Name: "bytes", Impairments: []Impairment{&Rate{Rate: 1_000_000, Queue: c.q}}}, func(*Packet) {})
				require.NoError(t, err)
				for range 20 {
					require.NoError(t, l.Send(schedPacket(schedArrival{Flow: 1, Size: 1000, ECN: ECT0})))
				}
				time.Sleep(time.Second)
				st := l.Stats()
				require.NoError(t, l.Close())
				require.Equal(t, c.dropped, int(st.Dropped[DropQueue].Packets))
				require.Equal(t, 20-c.dropped, int(st.Delivered.Packets))
			})
		})
	}
}
