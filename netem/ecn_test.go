package netem

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// ecnOverload sends 1200-byte packets carrying ecn every 914 µs for 3 s into
// a 10 Mbit/s rate (5% overload) behind lim, and returns the index of the
// first packet dropped or marked, with the counts of each.
func ecnOverload(t *testing.T, lim QueueLimit, ecn ECN) (first, drops, marks int) {
	d := newBNDriver(t, &Rate{Rate: 10_000_000, Queue: lim})
	first = -1
	i := 0
	for at := time.Duration(0); at < 3*time.Second; at += 914 * time.Microsecond {
		p := &Packet{Data: make([]byte, 1200), ECN: ecn}
		v := d.imp.Apply(p, t0.Add(at), &d.env)
		switch {
		case v.Drop != "":
			require.Equal(t, DropCoDel, v.Drop)
			drops++
		case v.Marked:
			require.Equal(t, CE, p.ECN, "a marked packet carries CE")
			marks++
		default:
			require.Equal(t, ecn, p.ECN, "an unmarked packet keeps its bits")
		}
		if first < 0 && (v.Drop != "" || v.Marked) {
			first = i
		}
		i++
	}
	return first, drops, marks
}

func TestECNCoDelMarksCapablePacketsInsteadOfDropping(t *testing.T) {
	lim := QueueLimit{CoDel: &CoDelParams{}}
	firstDrop, drops, marks := ecnOverload(t, lim, NotECT)
	t.Logf("not-ect: first signal at packet %d, %d drops, %d marks", firstDrop, drops, marks)
	require.Positive(t, drops)
	require.Zero(t, marks, "no mark on a packet that is not ECN-capable")
	for _, ecn := range []ECN{ECT0, ECT1, CE} {
		firstMark, drops, marks := ecnOverload(t, lim, ecn)
		t.Logf("%v: first signal at packet %d, %d drops, %d marks", ecn, firstMark, drops, marks)
		require.Zero(t, drops, "%v: marked, not dropped", ecn)
		require.Positive(t, marks, "%v", ecn)
		// Until the first signal the two runs are the same packets at the
		// same instants: CoDel signals the same packet, by a mark or a drop.
		require.Equal(t, firstDrop, firstMark, "%v", ecn)
	}
}
