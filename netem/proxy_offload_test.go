package netem

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

// gsoPackets makes packets of the given payload sizes, all to dst.
func gsoPackets(dst net.Addr, sizes ...int) []*Packet {
	pks := make([]*Packet, len(sizes))
	for i, n := range sizes {
		pks[i] = &Packet{Data: make([]byte, n), To: dst}
	}
	return pks
}

// withECN sets the packets' ECN bits, one codepoint each.
func withECN(pks []*Packet, ecn ...ECN) []*Packet {
	for i, e := range ecn {
		pks[i].ECN = e
	}
	return pks
}

func repeatSize(size, n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = size
	}
	return s
}

func TestGSORun(t *testing.T) {
	a := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}
	b := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2}
	for _, tc := range []struct {
		name string
		pks  []*Packet
		want int
	}{
		{"empty", nil, 0},
		{"one", gsoPackets(a, 1200), 1},
		{"equal sizes", gsoPackets(a, 1200, 1200, 1200), 3},
		{"last shorter", gsoPackets(a, 1200, 1200, 700), 3},
		// Only the tail may be short: the packet after a short one starts
		// the next run.
		{"short ends the run", gsoPackets(a, 1200, 700, 700), 2},
		{"larger ends the run", gsoPackets(a, 1200, 1200, 1300, 1200), 2},
		{"first larger than the rest", gsoPackets(a, 1300, 1200, 1200), 2},
		{"empty datagram alone", gsoPackets(a, 0, 0, 0), 1},
		{"empty datagram ends the run", gsoPackets(a, 1200, 0, 1200), 1},
		{"mixed destinations", append(gsoPackets(a, 1200, 1200), gsoPackets(b, 1200)...), 2},
		// One message has one IP_TOS: a packet a queue marked CE starts
		// a run of its own.
		{"mixed ECN bits", withECN(gsoPackets(a, 1200, 1200, 1200), ECT0, ECT0, CE), 2},
		{"64-segment cap", gsoPackets(a, repeatSize(100, 100)...), maxGSOSegments},
		{"64-segment cap with a short last", gsoPackets(a, append(repeatSize(100, 64), 50)...), maxGSOSegments},
		// 54 x 1200 = 64 800 fits under maxGSOBytes, 55 x 1200 does not.
		{"size cap", gsoPackets(a, repeatSize(1200, 60)...), 54},
		{"size cap with a short last", gsoPackets(a, append(repeatSize(1200, 54), 700)...), 55},
		{"size cap reached by the short last", gsoPackets(a, append(repeatSize(1200, 54), 800)...), 54},
		{"one datagram larger than half the cap", gsoPackets(a, 40000, 40000), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := gsoRun(tc.pks)
			require.Equal(t, tc.want, got)
			total := 0
			for _, pk := range tc.pks[:got] {
				total += len(pk.Data)
			}
			require.LessOrEqual(t, total, maxGSOBytes)
		})
	}
}

func TestNextSegment(t *testing.T) {
	msg := make([]byte, 3000)
	for i := range msg {
		msg[i] = byte(i)
	}
	split := func(msg []byte, seg int) [][]byte {
		var out [][]byte
		rest := msg
		for {
			var d []byte
			d, rest = nextSegment(rest, seg)
			out = append(out, d)
			if len(rest) == 0 {
				return out
			}
		}
	}
	for _, tc := range []struct {
		name  string
		msg   []byte
		seg   int
		sizes []int
	}{
		{"no segment size: one datagram", msg, 0, []int{3000}},
		{"last shorter", msg, 1200, []int{1200, 1200, 600}},
		{"exact multiple", msg[:2400], 1200, []int{1200, 1200}},
		{"one segment", msg[:1200], 1200, []int{1200}},
		{"segment larger than the message", msg[:500], 1200, []int{500}},
		{"empty datagram", msg[:0], 0, []int{0}},
		{"negative segment size is none", msg, -1, []int{3000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := split(tc.msg, tc.seg)
			sizes := make([]int, len(got))
			joined := []byte{}
			for i, d := range got {
				sizes[i] = len(d)
				joined = append(joined, d...)
			}
			require.Equal(t, tc.sizes, sizes)
			require.Equal(t, tc.msg, joined, "the datagrams are the message, in order")
		})
	}
}
