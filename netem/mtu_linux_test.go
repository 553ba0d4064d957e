package netem

import (
	"encoding/binary"
	"net"
	"net/netip"
	"testing"
	"testing/synctest"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// quic-go sets DF with setsockopt on SyscallConn's descriptor; the endpoint
// then sends with DF, and the link drops what is above its MTU.
func TestMTUPacketConnSetsDFThroughSyscallConn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(1)
		defer n.Close()
		a, b := n.MustListen("10.0.0.1:1"), n.MustListen("10.0.0.2:2")
		big := make([]byte, 1473) // 1501 bytes on the wire
		_, err := a.WriteTo(big, b.LocalAddr())
		require.NoError(t, err)
		raw, err := a.SyscallConn()
		require.NoError(t, err)
		var serr error
		require.NoError(t, raw.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_PROBE)
		}))
		require.NoError(t, serr)
		_, err = a.WriteTo(big, b.LocalAddr())
		require.NoError(t, err)
		_, err = a.WriteTo(big[:1472], b.LocalAddr())
		require.NoError(t, err)
		synctest.Wait()
		s := n.Link(netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")).Stats()
		require.Equal(t, uint64(1), s.Fragmented, "without DF")
		require.Equal(t, uint64(1), s.Dropped[DropMTU].Packets, "with DF")
		require.Equal(t, uint64(2), s.Delivered.Packets)
	})
}

// WriteMsgUDP splits a GSO batch into its datagrams; ReadBatch returns what
// waits, with the ECN control message once IP_RECVTOS is set.
func TestMTUPacketConnSpeaksOOB(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(1)
		defer n.Close()
		a, b := n.MustListen("10.0.0.1:1"), n.MustListen("10.0.0.2:2")
		raw, err := b.SyscallConn()
		require.NoError(t, err)
		require.NoError(t, raw.Control(func(fd uintptr) {
			require.NoError(t, unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_RECVTOS, 1))
		}))
		oob := make([]byte, unix.CmsgSpace(2))
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		h.Level, h.Type = unix.IPPROTO_UDP, unix.UDP_SEGMENT
		h.SetLen(unix.CmsgLen(2))
		binary.NativeEndian.PutUint16(oob[unix.CmsgLen(0):], 1000)
		k, oobn, err := a.WriteMsgUDP(make([]byte, 2500), oob, b.LocalAddr().(*net.UDPAddr))
		require.NoError(t, err)
		require.Equal(t, 2500, k)
		require.Equal(t, len(oob), oobn)
		synctest.Wait()

		ms := make([]ipv4.Message, 4)
		for i := range ms {
			ms[i].Buffers = [][]byte{make([]byte, 1500)}
			ms[i].OOB = make([]byte, 64)
		}
		got, err := b.ReadBatch(ms, 0)
		require.NoError(t, err)
		require.Equal(t, 3, got)
		for i, want := range []int{1000, 1000, 500} {
			require.Equal(t, want, ms[i].N)
			require.Equal(t, a.LocalAddr(), ms[i].Addr)
			cm, err := unix.ParseSocketControlMessage(ms[i].OOB[:ms[i].NN])
			require.NoError(t, err)
			require.Len(t, cm, 1)
			require.Equal(t, int32(unix.IP_TOS), cm[0].Header.Type)
			require.Equal(t, []byte{0}, cm[0].Data, "the path clears ECN")
		}
	})
}
