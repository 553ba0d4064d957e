package relay

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coder/websocket"
	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/netem/quicpair"
	"github.com/stretchr/testify/require"
)

// marker is plaintext the viewer sends on a QUIC stream; a relay that could
// read QUIC would see it.
var marker = []byte("PLAINTEXT-MARKER: the relay must never see this")

// tap records what a relay's Observe sees.
type tap struct {
	mu        sync.Mutex
	datagrams [2]uint64 // by role-1
	sawMarker bool
}

func (tp *tap) observe(from Role, data []byte) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	tp.datagrams[from-1]++
	tp.sawMarker = tp.sawMarker || bytes.Contains(data, marker)
}

// exchange sends payload from the client on a new stream, which the server
// echoes; it returns what came back and the virtual time it took.
func exchange(t *testing.T, p *quicpair.Pair, payload []byte) ([]byte, time.Duration) {
	t.Helper()
	go func() {
		s, err := p.Server.AcceptStream(context.Background())
		if err != nil {
			return
		}
		io.Copy(s, s)
		s.Close()
	}()
	s, err := p.Client.OpenStreamSync(context.Background())
	require.NoError(t, err)
	start := time.Now()
	_, err = s.Write(payload)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	got, err := io.ReadAll(s)
	require.NoError(t, err)
	return got, time.Since(start)
}

func TestQUICThroughTheRelay(t *testing.T) {
	// Finding N18: a full QUIC session through the relay, end to end
	// encrypted. Each link to and from the relay delays by 2.5 ms, so a
	// round trip between the peers is 10 ms and the handshake, which the
	// server completes on the client's Finished, 1.5 round trips.
	t.Run("UDPBothSidesCiphertextOnly", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var seen tap
			lab, cleanup := newLab(t, Config{Observe: seen.observe}, 2500*time.Microsecond)
			defer cleanup()
			id := sessionID(10)
			lab.relay.Register(id)
			agent := lab.bind(t, "10.0.0.2:5000", id, Agent)
			defer agent.Close()
			viewer := lab.bind(t, "10.0.0.1:6000", id, Viewer)
			defer viewer.Close()

			start := time.Now()
			p, err := quicpair.Open(context.Background(), agent, viewer, viewer.PeerAddr(), nil)
			require.NoError(t, err)
			defer p.Close()
			require.Equal(t, 15*time.Millisecond, time.Since(start), "1.5 round trips of 10 ms")
			t.Logf("QUIC handshake through the UDP relay (2.5 ms per relay link): %v", time.Since(start))

			got, rtt := exchange(t, p, marker)
			require.Equal(t, marker, got)
			require.Equal(t, 10*time.Millisecond, rtt, "a small echo: one round trip")
			payload := bytes.Repeat(marker, 500) // ~24 KB: quic-go paces it
			got, rtt = exchange(t, p, payload)
			require.Equal(t, payload, got, "the stream arrives intact")
			t.Logf("24 KB echo through the UDP relay: %v", rtt)

			seen.mu.Lock()
			defer seen.mu.Unlock()
			require.False(t, seen.sawMarker, "the relay saw plaintext")
			st := lab.relay.Stats()
			require.Equal(t, st.AgentToViewer.Datagrams, seen.datagrams[Agent-1], "Observe saw every forwarded datagram")
			require.Equal(t, st.ViewerToAgent.Datagrams, seen.datagrams[Viewer-1])
			require.Greater(t, st.ViewerToAgent.Bytes, uint64(len(payload)))
		})
	})

	// Finding N19: the viewer's UDP is blocked, so it reaches the relay in
	// a WebSocket over a stream with 10 ms each way; the agent stays on
	// UDP (2.5 ms per relay link). The same QUIC handshake runs end to end.
	t.Run("AgentOverUDPViewerOverWebSocket", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var seen tap
			lab, cleanup := newLab(t, Config{Observe: seen.observe}, 2500*time.Microsecond)
			defer cleanup()
			dial, stopHTTP := lab.webSocket(t, 10*time.Millisecond)
			defer stopHTTP()
			id := sessionID(11)
			lab.relay.Register(id)
			agent := lab.bind(t, "10.0.0.2:5000", id, Agent)
			defer agent.Close()

			ctx, cancel := context.WithCancel(context.Background())
			start := time.Now()
			viewer, err := DialWebSocket(ctx, dial("10.0.0.1:40000"), wsURL, id, Viewer)
			require.NoError(t, err)
			defer viewer.Close()
			// TCP handshake, HTTP upgrade, bind: three round trips of 20 ms.
			require.Equal(t, 60*time.Millisecond, time.Since(start))
			t.Logf("WebSocket dial and bind (10 ms each way): %v", time.Since(start))
			cancel() // ctx bounds the dial only: the tunnel lives on

			start = time.Now()
			p, err := quicpair.Open(context.Background(), agent, viewer, viewer.PeerAddr(), nil)
			require.NoError(t, err)
			// One-way agent-viewer: 2.5 + 2.5 ms of UDP and 10 ms of
			// stream; 1.5 round trips of 25 ms.
			require.Equal(t, 37500*time.Microsecond, time.Since(start))
			t.Logf("QUIC handshake, agent on UDP, viewer on WebSocket: %v", time.Since(start))

			got, rtt := exchange(t, p, marker)
			require.Equal(t, marker, got)
			require.Equal(t, 25*time.Millisecond, rtt)
			payload := bytes.Repeat(marker, 500)
			got, rtt = exchange(t, p, payload)
			require.Equal(t, payload, got)
			t.Logf("24 KB echo, UDP and WebSocket: %v", rtt)

			seen.mu.Lock()
			require.False(t, seen.sawMarker)
			seen.mu.Unlock()
			require.NoError(t, p.Close())
			closing := time.Now()
			require.NoError(t, viewer.Close(), "a clean WebSocket close")
			require.Equal(t, 20*time.Millisecond, time.Since(closing), "the close handshake: one stream round trip")
		})
	})
}

func TestWebSocket(t *testing.T) {
	t.Run("ForwardsToAndFromUDP", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			lab, cleanup := newLab(t, Config{}, 0)
			defer cleanup()
			dial, stopHTTP := lab.webSocket(t, 3*time.Millisecond)
			defer stopHTTP()
			id := sessionID(12)
			lab.relay.Register(id)
			agent := lab.bind(t, "10.0.0.2:5000", id, Agent)
			defer agent.Close()
			viewer, err := DialWebSocket(context.Background(), dial("10.0.0.1:40000"), wsURL, id, Viewer)
			require.NoError(t, err)
			defer viewer.Close()
			require.Equal(t, "websocket", viewer.PeerAddr().Network())
			require.Equal(t, wsURL, viewer.PeerAddr().String())
			require.Equal(t, "10.0.0.1:40000", viewer.LocalAddr().String())

			for _, size := range []int{1, 1200, maxDatagram} {
				sent := time.Now()
				_, err := agent.WriteTo(quicLike(size, 1), nil)
				require.NoError(t, err)
				got, from := readWithin(t, viewer, time.Second)
				require.Equal(t, quicLike(size, 1), got, "byte for byte, one message per datagram")
				require.Equal(t, viewer.PeerAddr(), from)
				require.Equal(t, 3*time.Millisecond, time.Since(sent))

				_, err = viewer.WriteTo(quicLike(size, 2), nil)
				require.NoError(t, err)
				got, _ = readWithin(t, agent, time.Second)
				require.Equal(t, quicLike(size, 2), got)
			}
			// Deadlines wake the tunnel's reader as they do a socket's.
			requireNothing(t, viewer, 50*time.Millisecond)
		})
	})

	t.Run("UnknownSessionIsRefusedAndTheTunnelClosed", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			lab, cleanup := newLab(t, Config{}, 0)
			defer cleanup()
			dial, stopHTTP := lab.webSocket(t, 5*time.Millisecond)
			defer stopHTTP()
			_, err := DialWebSocket(context.Background(), dial("10.0.0.1:40000"), wsURL, sessionID(13), Viewer)
			require.ErrorIs(t, err, ErrRefused)
			require.Equal(t, uint64(1), lab.relay.Stats().Refused)
			// The handler has ended (the bubble's end proves no goroutine
			// is left), after the client's clean close.
		})
	})

	t.Run("APeerThatNeverBindsIsClosed", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			lab, cleanup := newLab(t, Config{HandshakeTimeout: 3 * time.Second}, 0)
			defer cleanup()
			dial, stopHTTP := lab.webSocket(t, 5*time.Millisecond)
			defer stopHTTP()
			ws, _, err := websocket.Dial(context.Background(), wsURL, &websocket.DialOptions{HTTPClient: httpClient(dial("10.0.0.1:40000"))})
			require.NoError(t, err)
			defer ws.CloseNow()
			upgraded := time.Now()
			_, _, err = ws.Read(context.Background())
			require.Error(t, err)
			// The relay gives up at its deadline, counted from the upgrade
			// it saw 5 ms before the client did; the close takes 5 ms.
			require.Equal(t, 3*time.Second, time.Since(upgraded))
		})
	})

	t.Run("NonBinaryMessagesCloseTheTunnel", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			lab, cleanup := newLab(t, Config{}, 0)
			defer cleanup()
			dial, stopHTTP := lab.webSocket(t, time.Millisecond)
			defer stopHTTP()
			ws, _, err := websocket.Dial(context.Background(), wsURL, &websocket.DialOptions{HTTPClient: httpClient(dial("10.0.0.1:40000"))})
			require.NoError(t, err)
			defer ws.CloseNow()
			require.NoError(t, ws.Write(context.Background(), websocket.MessageText, []byte("hello")))
			_, _, err = ws.Read(context.Background())
			require.Equal(t, websocket.StatusUnsupportedData, websocket.CloseStatus(err))
		})
	})
}

func TestCloseEndsEverything(t *testing.T) {
	t.Run("UDPAndWebSocketPeers", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			lab, cleanup := newLab(t, Config{}, time.Millisecond)
			dial, stopHTTP := lab.webSocket(t, 2*time.Millisecond)
			defer stopHTTP()
			id := sessionID(14)
			lab.relay.Register(id)
			agent := lab.bind(t, "10.0.0.2:5000", id, Agent)
			defer agent.Close()
			viewer, err := DialWebSocket(context.Background(), dial("10.0.0.1:40000"), wsURL, id, Viewer)
			require.NoError(t, err)
			defer viewer.Close()
			reading := make(chan error, 1)
			go func() {
				_, _, err := viewer.ReadFrom(make([]byte, 2000))
				reading <- err
			}()

			start := time.Now()
			cleanup() // Close, and ServeUDP returned ErrServerClosed
			require.Equal(t, 4*time.Millisecond, time.Since(start), "the close handshake: one round trip")
			err = <-reading
			require.ErrorIs(t, err, net.ErrClosed, "the relay closed the tunnel")
			var ce websocket.CloseError
			require.True(t, errors.As(err, &ce))
			require.Equal(t, websocket.StatusGoingAway, ce.Code)

			// A closed relay takes no new tunnels, and Close is idempotent.
			_, err = DialWebSocket(context.Background(), dial("10.0.0.1:40001"), wsURL, id, Viewer)
			require.Error(t, err)
			require.NoError(t, lab.relay.Close())
			other := netem.NewNetwork(2)
			defer other.Close()
			require.ErrorIs(t, lab.relay.ServeUDP(other.MustListen("10.0.0.3:1")), ErrServerClosed)
		})
	})
}
