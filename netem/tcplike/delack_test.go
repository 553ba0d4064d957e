package tcplike

import (
	"context"
	"net"
	"net/netip"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// The client acknowledges as Linux's receiver does: its first 16
// segments at once (quick ACKs), then every second segment, a single one
// after DelayedAck, and at once a segment out of order (with its SACK
// block) or one that fills the hole. A raw socket plays the server, on
// links of no delay, so that each ACK's time is exact.
func TestDelayedAcks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := path(t, 1, nil, nil)
		defer n.Close()
		raw, err := n.Listen(netip.AddrPortFrom(serverIP, 5000))
		require.NoError(t, err)
		cc, err := n.Listen(netip.AddrPortFrom(clientIP, 5000))
		require.NoError(t, err)
		cli := NewClient(cc)
		defer cli.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() { _, _ = cli.Fetch(ctx, raw.LocalAddr(), 0, nil) }()

		// acks reads what the client sent until it waits for more.
		acks := func() []segment {
			var got []segment
			buf := make([]byte, 2048)
			for {
				synctest.Wait()
				require.NoError(t, raw.SetReadDeadline(time.Now()))
				k, _, err := raw.ReadFrom(buf)
				if err != nil {
					require.ErrorIs(t, err, os.ErrDeadlineExceeded)
					require.NoError(t, raw.SetReadDeadline(time.Time{}))
					return got
				}
				s, ok := decode(buf[:k])
				require.True(t, ok)
				got = append(got, s)
			}
		}
		var peer net.Addr = cc.LocalAddr()
		var id uint32
		send := func(s segment, size int) {
			s.conn = id
			_, err := raw.WriteTo(s.encode(nil, size), peer)
			require.NoError(t, err)
		}
		data := func(seq int64) { send(segment{typ: typeData, seq: seq, ts: seq + 1, length: MSS}, HeaderBytes+MSS) }

		hs := acks()
		require.Len(t, hs, 1)
		require.Equal(t, byte(typeSYN), hs[0].typ)
		id = hs[0].conn
		send(segment{typ: typeSYNACK, ts: 1}, synBytes)
		req := acks()
		require.Len(t, req, 1)
		require.Equal(t, byte(typeReq), req[0].typ)

		// Quick ACKs: each of the first 16 segments at once.
		for seq := range int64(maxQuickAcks) {
			data(seq)
			a := acks()
			require.Len(t, a, 1, "segment %d", seq)
			require.Equal(t, seq+1, a[0].seq)
		}
		// Then one segment is held, the second one sends the ACK of both,
		// echoing the first one's timestamp.
		data(16)
		require.Empty(t, acks(), "a single segment is held")
		data(17)
		a := acks()
		require.Len(t, a, 1)
		require.Equal(t, int64(18), a[0].seq)
		require.Equal(t, int64(17), a[0].ts, "the first segment's timestamp")
		// A single segment is acknowledged DelayedAck later, exactly.
		data(18)
		start := time.Now()
		require.Empty(t, acks())
		time.Sleep(DelayedAck - time.Nanosecond)
		require.Empty(t, acks())
		time.Sleep(time.Nanosecond)
		a = acks()
		require.Len(t, a, 1)
		require.Equal(t, int64(19), a[0].seq)
		require.Equal(t, DelayedAck, time.Since(start))
		// Out of order: at once, with its SACK block.
		data(20)
		a = acks()
		require.Len(t, a, 1)
		require.Equal(t, int64(19), a[0].seq)
		require.Equal(t, [][2]int64{{20, 21}}, a[0].blocks)
		// The hole filled: at once.
		data(19)
		a = acks()
		require.Len(t, a, 1)
		require.Equal(t, int64(21), a[0].seq)
		require.Empty(t, a[0].blocks)
	})
}
