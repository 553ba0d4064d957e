package netem

import (
	"net"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// tosMessage is the IP_TOS control message a sender passes to WriteMsgUDP.
func tosMessage(tos byte) []byte {
	oob := make([]byte, unix.CmsgSpace(1))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
	h.Level, h.Type = unix.IPPROTO_IP, unix.IP_TOS
	h.SetLen(unix.CmsgLen(1))
	oob[unix.CmsgLen(0)] = tos
	return oob
}

// ecnThroughControlMessages sends 40 ECT(0) datagrams at once through
// CoDel at 1 Mbit/s and returns the largest ECN byte the receiver's control
// messages report and the link's marks; pass sets PassECN on both ends.
func ecnThroughControlMessages(t *testing.T, pass bool) (got byte, marked, dropped uint64) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(1)
		defer n.Close()
		a, b := n.MustListen("10.0.0.1:1"), n.MustListen("10.0.0.2:2")
		a.PassECN(pass)
		b.PassECN(pass)
		raw, err := b.SyscallConn()
		require.NoError(t, err)
		require.NoError(t, raw.Control(func(fd uintptr) {
			require.NoError(t, unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_RECVTOS, 1))
		}))
		// A standing queue at 1 Mbit/s: 40 packets of 1200 bytes wait
		// 384 ms at the end, so CoDel, past its 100 ms interval above
		// 5 ms, signals on the later ones.
		from, at := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
		_, err = n.SetLink(from, at, LinkConfig{Impairments: []Impairment{
			&Rate{Rate: 1e6, Queue: QueueLimit{CoDel: &CoDelParams{}}},
		}})
		require.NoError(t, err)
		to := b.LocalAddr().(*net.UDPAddr)
		for range 40 {
			_, _, err := a.WriteMsgUDP(make([]byte, 1200), tosMessage(byte(ECT0)), to)
			require.NoError(t, err)
		}
		time.Sleep(time.Second)
		stats := n.Link(from, at).Stats()
		buf, oob := make([]byte, 1500), make([]byte, 64)
		for range stats.Delivered.Packets {
			_, oobn, _, _, err := b.ReadMsgUDP(buf, oob)
			require.NoError(t, err)
			cm, err := unix.ParseSocketControlMessage(oob[:oobn])
			require.NoError(t, err)
			require.Len(t, cm, 1)
			got = max(got, cm[0].Data[0])
		}
		t.Logf("pass %v: %d delivered, %d marked, %v dropped", pass, stats.Delivered.Packets, stats.Marked.Packets, stats.Dropped)
		marked, dropped = stats.Marked.Packets, stats.Dropped[DropCoDel].Packets
	})
	return got, marked, dropped
}

// With PassECN the bits a sender writes in IP_TOS cross the path, a queue
// marks them CE instead of dropping, and the receiver reads CE in its
// control message; without it the path clears them, so CoDel drops the
// same four packets it marked and the receiver reads Not-ECT.
func TestECNThroughControlMessages(t *testing.T) {
	got, marked, dropped := ecnThroughControlMessages(t, true)
	require.Equal(t, byte(CE), got, "a marked datagram reads CE")
	require.Positive(t, marked)
	require.Zero(t, dropped)
	got, marked, dropped = ecnThroughControlMessages(t, false)
	require.Equal(t, byte(NotECT), got, "the path clears the bits")
	require.Zero(t, marked)
	require.Equal(t, uint64(4), dropped, "CoDel drops what it would have marked")
}
