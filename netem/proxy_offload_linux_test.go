package netem

import (
	"bytes"
	"encoding/binary"
	"net"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// appendTestCmsg appends a control message built by hand, as the kernel
// lays it out.
func appendTestCmsg(b []byte, level, typ int32, data []byte) []byte {
	h := make([]byte, unix.CmsgSpace(len(data)))
	putCmsgLen(h, unix.CmsgLen(len(data)))
	binary.NativeEndian.PutUint32(h[cmsgLenSize:], uint32(level))
	binary.NativeEndian.PutUint32(h[cmsgLenSize+4:], uint32(typ))
	copy(h[unix.CmsgLen(0):], data)
	return append(b, h...)
}

func groCmsg(size int32) []byte {
	return appendTestCmsg(nil, unix.SOL_UDP, unix.UDP_GRO, binary.NativeEndian.AppendUint32(nil, uint32(size)))
}

func TestAppendSegmentCmsg(t *testing.T) {
	prefix := []byte("keep")
	b := appendSegmentCmsg(slices.Clone(prefix), 1200)
	require.Equal(t, prefix, b[:len(prefix)], "appends")
	msgs, err := unix.ParseSocketControlMessage(b[len(prefix):])
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	require.EqualValues(t, unix.SOL_UDP, msgs[0].Header.Level)
	require.EqualValues(t, unix.UDP_SEGMENT, msgs[0].Header.Type)
	require.Equal(t, uint16(1200), binary.NativeEndian.Uint16(msgs[0].Data))
	require.Len(t, b[len(prefix):], gsoOOBSize, "the buffer newSendBatch reserves is enough")
}

func TestGROSegmentSize(t *testing.T) {
	other := appendTestCmsg(nil, unix.SOL_SOCKET, unix.SO_TIMESTAMP, make([]byte, 16))
	gro := groCmsg(1200)
	for _, tc := range []struct {
		name string
		oob  []byte
		want int
	}{
		{"none", nil, 0},
		{"alone", gro, 1200},
		{"after another message", append(slices.Clone(other), gro...), 1200},
		{"before another message", append(slices.Clone(gro), other...), 1200},
		{"only another message", other, 0},
		{"UDP_SEGMENT is not UDP_GRO", appendSegmentCmsg(nil, 1200), 0},
		{"truncated header", gro[:unix.CmsgLen(0)-1], 0},
		{"truncated data", gro[:unix.CmsgLen(0)+2], 0},
		{"negative size", groCmsg(-5), 0},
		{"length past the buffer", func() []byte {
			b := slices.Clone(gro)
			putCmsgLen(b, len(b)+1)
			return b
		}(), 0},
		{"length shorter than a header", func() []byte {
			b := slices.Clone(gro)
			putCmsgLen(b, 3)
			return b
		}(), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, groSegmentSize(tc.oob))
		})
	}
}

func FuzzGROSegmentSize(f *testing.F) {
	f.Add(groCmsg(1200))
	f.Add(append(appendTestCmsg(nil, unix.SOL_SOCKET, unix.SO_TIMESTAMP, make([]byte, 16)), groCmsg(1)...))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, oob []byte) {
		if n := groSegmentSize(oob); n < 0 {
			t.Fatalf("negative segment size %d", n)
		}
	})
}

// gsoTestPayloads makes n payloads of size bytes, the last one last bytes,
// each starting with its index (if it has room) and filled from it, so that a
// datagram cut in the wrong place or reordered shows.
func gsoTestPayloads(first, n, size, last int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		s := size
		if i == n-1 {
			s = last
		}
		p := make([]byte, s)
		for j := range p {
			p[j] = byte(first + i + j)
		}
		if s >= 4 {
			binary.LittleEndian.PutUint32(p, uint32(first+i))
		}
		out[i] = p
	}
	return out
}

// gsoListen is a UDP socket on loopback with big buffers.
func gsoListen(t *testing.T) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	setBuffers(c)
	t.Cleanup(func() { c.Close() })
	return c
}

// gsoDial is a UDP socket connected to to, skipping the test where the
// kernel cannot send with GSO, or failing it there when
// LAB_REQUIRE_KERNEL=1 says the kernel's offloads must be tested (CI: a
// runner whose kernel lost them would otherwise pass these tests
// untested).
func gsoDial(t *testing.T, to net.Addr) *net.UDPConn {
	t.Helper()
	c, err := net.DialUDP("udp", nil, to.(*net.UDPAddr))
	require.NoError(t, err)
	setBuffers(c)
	t.Cleanup(func() { c.Close() })
	if !gsoSupported(c) {
		if os.Getenv("LAB_REQUIRE_KERNEL") == "1" {
			t.Fatal("LAB_REQUIRE_KERNEL=1 but the kernel does not offer UDP GSO")
		}
		t.Skip("skipping: the kernel does not offer UDP GSO (set LAB_REQUIRE_KERNEL=1 to make this a failure)")
	}
	return c
}

// gsoSend sends payloads (all of the first one's size but the last) in one
// sendmsg with UDP_SEGMENT, as a GSO sender such as quic-go does.
func gsoSend(t *testing.T, c *net.UDPConn, payloads [][]byte) {
	t.Helper()
	oob := appendSegmentCmsg(nil, uint16(len(payloads[0])))
	_, _, err := c.WriteMsgUDP(bytes.Join(payloads, nil), oob, nil)
	require.NoError(t, err)
}

// readDatagrams reads n datagrams from c (no GRO on it: the kernel
// segments), each within the test's timeout.
func readDatagrams(t *testing.T, c *net.UDPConn, n int) [][]byte {
	t.Helper()
	out := make([][]byte, 0, n)
	buf := make([]byte, proxyReadBuf)
	for len(out) < n {
		require.NoError(t, c.SetReadDeadline(time.Now().Add(proxyTestTimeout)))
		m, err := c.Read(buf)
		require.NoError(t, err, "after %d of %d datagrams", len(out), n)
		out = append(out, slices.Clone(buf[:m]))
	}
	return out
}

// The kernel hands a GRO socket a GSO burst as one message; the reader
// splits it back into the datagrams, the short last one included.
func TestBatchReaderSplitsGRO(t *testing.T) {
	recv := gsoListen(t)
	enableGRO(recv)
	send := gsoDial(t, recv.LocalAddr())
	// More datagrams than one batch of messages holds: they can only come
	// back in one read if they came as one message.
	want := gsoTestPayloads(0, proxyBatch+8, 1000, 333)
	gsoSend(t, send, want)

	rd := newBatchReader(recv, ipv4.NewPacketConn(recv))
	require.NoError(t, recv.SetReadDeadline(time.Now().Add(proxyTestTimeout)))
	var got [][]byte
	require.NoError(t, rd.read(func(data []byte, from net.Addr, _ ECN) {
		require.Equal(t, send.LocalAddr().String(), from.String())
		got = append(got, slices.Clone(data))
	}))
	require.Equal(t, want, got)
}

// writeBatch coalesces a run into one UDP_SEGMENT message: a GRO receiver
// gets it back as one message with the run's segment size.
func TestWriteBatchSendsWithGSO(t *testing.T) {
	recv := gsoListen(t)
	enableGRO(recv)
	send := gsoDial(t, recv.LocalAddr())
	payloads := gsoTestPayloads(0, 10, 1200, 500)
	pks := make([]*Packet, len(payloads))
	for i, p := range payloads {
		pks[i] = &Packet{Data: p, To: recv.LocalAddr()}
	}
	gso := true
	writeBatch(ipv4.NewPacketConn(send), &gso, pks, newSendBatch(), false, true)
	require.True(t, gso)

	buf, oob := make([]byte, proxyReadBuf), make([]byte, groOOBSize)
	require.NoError(t, recv.SetReadDeadline(time.Now().Add(proxyTestTimeout)))
	n, nn, _, _, err := recv.ReadMsgUDP(buf, oob)
	require.NoError(t, err)
	require.Equal(t, 1200, groSegmentSize(oob[:nn]), "one coalesced message")
	require.Equal(t, bytes.Join(payloads, nil), buf[:n])
}

// A socket that refuses segmentation (here because it sends without UDP
// checksums, which GSO needs: the kernel says EINVAL) turns GSO off at the
// first refusal, and every datagram still goes out, in order.
func TestWriteBatchFallsBackWithoutLoss(t *testing.T) {
	recv := gsoListen(t)
	send := gsoDial(t, recv.LocalAddr())
	rc, err := send.SyscallConn()
	require.NoError(t, err)
	var serr error
	require.NoError(t, rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_NO_CHECK, 1)
	}))
	require.NoError(t, serr)

	// A plain datagram first: the refused message is not the batch's first.
	want := [][]byte{[]byte("plain")}
	want = append(want, gsoTestPayloads(1, 70, 1200, 1200)...)
	want = append(want, gsoTestPayloads(71, 5, 900, 100)...)
	pks := make([]*Packet, len(want))
	for i, p := range want {
		pks[i] = &Packet{Data: p, To: recv.LocalAddr()}
	}
	gso := true
	writeBatch(ipv4.NewPacketConn(send), &gso, pks, newSendBatch(), false, true)
	require.False(t, gso, "GSO turned off")
	require.Equal(t, want, readDatagrams(t, recv, len(want)))
}

// End to end: a client sending GSO bursts through the proxy (which reads
// them with GRO and writes with GSO) reaches a plain target with every
// datagram intact and in order, plain datagrams between the bursts too.
func TestProxyCarriesGSOBursts(t *testing.T) {
	target := gsoListen(t)
	p := newTestProxy(t, ProxyConfig{Target: target.LocalAddr().String()})
	client := gsoDial(t, p.Addr())

	var want [][]byte
	bursts := [][][]byte{
		gsoTestPayloads(0, maxGSOSegments, 1000, 1000), // 64 000 bytes
		gsoTestPayloads(64, 11, 1000, 300),
		gsoTestPayloads(75, 40, 1400, 1),
	}
	for i, burst := range bursts {
		gsoSend(t, client, burst)
		want = append(want, burst...)
		plain := []byte{'p', byte(i)}
		_, err := client.Write(plain)
		require.NoError(t, err)
		want = append(want, plain)
	}
	require.Equal(t, want, readDatagrams(t, target, len(want)))
	fwd, _ := p.Stats()
	require.Equal(t, uint64(len(want)), fwd.Delivered.Packets)
}
