package quicpair

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/nuvirahub/latencylab/netem"
	"github.com/stretchr/testify/require"
)

// The same helper in real time: real UDP sockets on loopback, the client
// dialling the impairment proxy, which forwards to the server.
func TestQUICThroughTheRealTimeProxy(t *testing.T) {
	server, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer server.Close()
	client, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer client.Close()
	delay := func() []netem.Impairment { return []netem.Impairment{&netem.Delay{Delay: 10 * time.Millisecond}} }
	proxy, err := netem.NewProxy(netem.ProxyConfig{
		Target:  server.LocalAddr().String(),
		Forward: netem.LinkConfig{Impairments: delay()},
		Reverse: netem.LinkConfig{Impairments: delay()},
	})
	require.NoError(t, err)
	defer proxy.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := Open(ctx, server, client, proxy.Addr(), nil)
	require.NoError(t, err)
	defer p.Close()
	go func() {
		s, err := p.Server.AcceptStream(ctx)
		if err != nil {
			return
		}
		io.Copy(s, s)
		s.Close()
	}()
	s, err := p.Client.OpenStreamSync(ctx)
	require.NoError(t, err)
	_, err = s.Write([]byte("through the proxy"))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	got, err := io.ReadAll(s)
	require.NoError(t, err)
	require.Equal(t, "through the proxy", string(got))
	// Delays are minimums: no packet can cross faster than configured.
	require.GreaterOrEqual(t, p.Client.ConnectionStats().MinRTT, 20*time.Millisecond)
	fwd, rev := proxy.Stats()
	require.Positive(t, fwd.Delivered.Packets)
	require.Positive(t, rev.Delivered.Packets)
}
