package relay

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRelay(t *testing.T) {
	t.Run("BindAndForwardBothWays", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			lab, cleanup := newLab(t, Config{}, 0)
			defer cleanup()
			id := sessionID(1)
			lab.relay.Register(id)
			agent := lab.bind(t, "10.0.0.2:5000", id, Agent)
			defer agent.Close()
			viewer := lab.bind(t, "10.0.0.1:6000", id, Viewer)
			defer viewer.Close()
			require.Equal(t, lab.udpAddr, agent.PeerAddr())

			for _, size := range []int{1, 1200, 1452, maxDatagram} {
				up, down := quicLike(size, 7), quicLike(size, 9)
				n, err := agent.WriteTo(up, &net.UDPAddr{}) // any address: it goes to the relay
				require.NoError(t, err)
				require.Equal(t, size, n)
				got, from := readWithin(t, viewer, time.Second)
				require.Equal(t, up, got, "byte for byte")
				require.Equal(t, viewer.PeerAddr(), from, "one consistent remote for quic-go")

				_, err = viewer.WriteTo(down, nil)
				require.NoError(t, err)
				got, _ = readWithin(t, agent, time.Second)
				require.Equal(t, down, got)
			}
			st := lab.relay.Stats()
			require.Equal(t, uint64(2), st.Bound)
			want := Flow{Datagrams: 4, Bytes: 1 + 1200 + 1452 + maxDatagram}
			require.Equal(t, want, st.AgentToViewer)
			require.Equal(t, want, st.ViewerToAgent)
			require.Zero(t, st.DroppedUnbound+st.DroppedNoPeer+st.DroppedMalformed+st.DroppedSend)

			_, err := agent.WriteTo([]byte{0x00, 1, 2}, nil)
			require.ErrorIs(t, err, ErrNotQUIC, "a control byte would be read as a control message")
			_, err = agent.WriteTo(nil, nil)
			require.ErrorIs(t, err, ErrNotQUIC)
		})
	})

	t.Run("UnknownSessionIsRefused", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			lab, cleanup := newLab(t, Config{}, time.Millisecond)
			defer cleanup()
			pc := lab.net.MustListen("10.0.0.2:5000")
			defer pc.Close()
			start := time.Now()
			_, err := Bind(context.Background(), pc, lab.udpAddr, sessionID(2), Agent)
			require.ErrorIs(t, err, ErrRefused)
			require.Equal(t, 2*time.Millisecond, time.Since(start), "refused in one round trip, no retransmit")
			require.Equal(t, uint64(1), lab.relay.Stats().Refused)
			require.Zero(t, lab.relay.Stats().Bound)

			// The socket stays the caller's, with no deadline left on it.
			_, err = pc.WriteTo(quicLike(10, 1), lab.udpAddr)
			require.NoError(t, err)
		})
	})

	t.Run("UnboundAndMalformedAreDroppedNeverForwarded", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			lab, cleanup := newLab(t, Config{}, time.Millisecond)
			defer cleanup()
			id := sessionID(3)
			lab.relay.Register(id)
			agent := lab.bind(t, "10.0.0.2:5000", id, Agent)
			defer agent.Close()

			// The agent's datagram has nowhere to go yet.
			_, err := agent.WriteTo(quicLike(100, 1), nil)
			require.NoError(t, err)
			synctest.Wait()
			time.Sleep(time.Millisecond)
			synctest.Wait()
			require.Equal(t, uint64(1), lab.relay.Stats().DroppedNoPeer)

			viewer := lab.bind(t, "10.0.0.1:6000", id, Viewer)
			defer viewer.Close()
			// An address bound to nothing, on the agent's host, spoofing
			// nothing but knowing the relay: dropped.
			stranger := lab.net.MustListen("10.0.0.2:5001")
			defer stranger.Close()
			_, err = stranger.WriteTo(quicLike(100, 2), lab.udpAddr)
			require.NoError(t, err)
			// Malformed control messages bind nothing and are not forwarded.
			bad := control{typ: msgBind, session: id, role: Agent}.appendTo(nil)
			bad[5] = 99 // version
			_, err = stranger.WriteTo(bad, lab.udpAddr)
			require.NoError(t, err)
			_, err = stranger.WriteTo([]byte{}, lab.udpAddr)
			require.NoError(t, err)
			requireNothing(t, viewer, time.Second)
			requireNothing(t, agent, time.Second)

			st := lab.relay.Stats()
			require.Equal(t, uint64(1), st.DroppedUnbound)
			require.Equal(t, uint64(2), st.DroppedMalformed)
			require.Zero(t, st.AgentToViewer.Datagrams+st.ViewerToAgent.Datagrams)

			// A datagram from the viewer does not reach the stranger either.
			_, err = viewer.WriteTo(quicLike(50, 3), nil)
			require.NoError(t, err)
			requireNothing(t, stranger, time.Second)
			got, _ := readWithin(t, agent, time.Second)
			require.Equal(t, quicLike(50, 3), got)
		})
	})

	t.Run("BindRetransmitsUntilTheRelayAnswers", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			lab, cleanup := newLab(t, Config{}, 0)
			defer cleanup()
			id := sessionID(4)
			// The relay's second port opens only at 500 ms: the bind
			// messages sent before find no endpoint and are lost.
			go func() {
				time.Sleep(500 * time.Millisecond)
				lab.relay.Register(id)
				lab.relay.ServeUDP(lab.net.MustListen("10.0.0.3:3479"))
			}()
			start := time.Now()
			c, err := Bind(context.Background(), lab.net.MustListen("10.0.0.2:5000"), udpAddr("10.0.0.3:3479"), id, Agent)
			require.NoError(t, err)
			defer c.Close()
			require.Equal(t, 600*time.Millisecond, time.Since(start), "sent at 0, 200, 400 (lost) and 600 ms")
			require.Equal(t, uint64(3), lab.net.NoRoute().Packets)

			// A relay that never answers: ctx ends the bind, exactly.
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			pc := lab.net.MustListen("10.0.0.2:5001")
			defer pc.Close()
			start = time.Now()
			_, err = Binder{Retransmit: 300 * time.Millisecond}.Bind(ctx, pc, udpAddr("10.0.0.3:9"), id, Agent)
			require.ErrorIs(t, err, context.DeadlineExceeded)
			require.Equal(t, time.Second, time.Since(start))
		})
	})

	t.Run("RefreshKeepsBindingsAliveAndSilenceExpiresThem", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			lab, cleanup := newLab(t, Config{}, time.Millisecond)
			defer cleanup()
			id := sessionID(5)
			lab.relay.Register(id)
			agent := lab.bind(t, "10.0.0.2:5000", id, Agent) // refreshes every 15 s
			defer agent.Close()
			quiet, err := Binder{Refresh: -1}.Bind(context.Background(), lab.net.MustListen("10.0.0.1:6000"), lab.udpAddr, id, Viewer)
			require.NoError(t, err)
			defer quiet.Close()

			// The agent's reader consumes the relay's replies to its
			// refreshes, and gives nothing to quic-go.
			requireNothing(t, agent, 61*time.Second)
			st := lab.relay.Stats()
			require.Equal(t, uint64(2+4), st.Bound, "two binds, refreshes at 15, 30, 45 and 60 s")

			// The viewer said nothing for 61 s: its binding expired.
			_, err = agent.WriteTo(quicLike(10, 1), nil)
			require.NoError(t, err)
			requireNothing(t, quiet, time.Second)
			require.Equal(t, uint64(1), lab.relay.Stats().DroppedNoPeer)
			_, err = quiet.WriteTo(quicLike(10, 2), nil)
			require.NoError(t, err)
			requireNothing(t, agent, time.Second)
			require.Equal(t, uint64(1), lab.relay.Stats().DroppedUnbound)
		})
	})

	t.Run("RebindingMovesTheRole", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			lab, cleanup := newLab(t, Config{}, time.Millisecond)
			defer cleanup()
			id := sessionID(6)
			lab.relay.Register(id)
			viewer := lab.bind(t, "10.0.0.1:6000", id, Viewer)
			defer viewer.Close()
			old := lab.bind(t, "10.0.0.2:5000", id, Agent)
			defer old.Close()
			// The agent's NAT gave it a new port.
			moved := lab.bind(t, "10.0.0.2:5999", id, Agent)
			defer moved.Close()
			require.Equal(t, uint64(1), lab.relay.Stats().Rebound)

			_, err := viewer.WriteTo(quicLike(20, 1), nil)
			require.NoError(t, err)
			got, _ := readWithin(t, moved, time.Second)
			require.Equal(t, quicLike(20, 1), got)
			requireNothing(t, old, time.Second)

			_, err = old.WriteTo(quicLike(20, 2), nil)
			require.NoError(t, err)
			requireNothing(t, viewer, time.Second)
			require.Equal(t, uint64(1), lab.relay.Stats().DroppedUnbound)
		})
	})

	// Finding N18: the relay adds its two links to the path. With 2.5 ms on
	// each link to and from the relay host, a datagram takes 5 ms one way,
	// the figure documented for a relay on a LAN.
	t.Run("RelayLinksDelayExactly", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			lab, cleanup := newLab(t, Config{}, 2500*time.Microsecond)
			defer cleanup()
			id := sessionID(7)
			lab.relay.Register(id)
			start := time.Now()
			agent := lab.bind(t, "10.0.0.2:5000", id, Agent)
			defer agent.Close()
			require.Equal(t, 5*time.Millisecond, time.Since(start), "bind: one round trip to the relay")
			viewer := lab.bind(t, "10.0.0.1:6000", id, Viewer)
			defer viewer.Close()

			for _, dir := range []struct{ from, to *Conn }{{agent, viewer}, {viewer, agent}} {
				sent := time.Now()
				_, err := dir.from.WriteTo(quicLike(1200, 1), nil)
				require.NoError(t, err)
				readWithin(t, dir.to, time.Second)
				require.Equal(t, 5*time.Millisecond, time.Since(sent), "one way via the relay")
			}
		})
	})
}

func udpAddr(s string) net.Addr { return net.UDPAddrFromAddrPort(netip.MustParseAddrPort(s)) }
