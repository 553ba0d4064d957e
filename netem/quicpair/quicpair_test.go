package quicpair

import (
	"context"
	"io"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nuvirahub/latencylab/netem"
	"github.com/stretchr/testify/require"
)

var (
	viewerIP = netip.MustParseAddr("10.0.0.1")
	agentIP  = netip.MustParseAddr("10.0.0.2")
)

// delayNetwork is an in-memory network with a one-way delay each way.
func delayNetwork(t *testing.T, oneWay time.Duration) *netem.Network {
	n := netem.NewNetwork(1)
	for _, r := range [][2]netip.Addr{{viewerIP, agentIP}, {agentIP, viewerIP}} {
		_, err := n.SetLink(r[0], r[1], netem.LinkConfig{Impairments: []netem.Impairment{&netem.Delay{Delay: oneWay}}})
		require.NoError(t, err)
	}
	return n
}

func TestHandshakeAndEchoInVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := delayNetwork(t, 25*time.Millisecond)
		defer n.Close()
		server, client := n.MustListen("10.0.0.2:4433"), n.MustListen("10.0.0.1:5000")
		start := time.Now()
		p, err := Open(context.Background(), server, client, nil, nil)
		require.NoError(t, err)
		defer p.Close()
		// The client completes after one round trip, the server (and so
		// Open) when the client's Finished arrives: 1.5 round trips.
		require.Equal(t, 75*time.Millisecond, time.Since(start))
		require.True(t, p.Client.ConnectionState().TLS.HandshakeComplete)
		require.Equal(t, ALPN, p.Client.ConnectionState().TLS.NegotiatedProtocol)

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
		sent := time.Now()
		_, err = s.Write([]byte("hello"))
		require.NoError(t, err)
		require.NoError(t, s.Close())
		got, err := io.ReadAll(s)
		require.NoError(t, err)
		require.Equal(t, "hello", string(got))
		require.Equal(t, 50*time.Millisecond, time.Since(sent), "one round trip, exactly")
	})
}

func TestCertificateValidAcrossTheBubblesClock(t *testing.T) {
	server, _, err := TLS()
	require.NoError(t, err)
	leaf := server.Certificates[0].Leaf
	require.True(t, leaf.NotBefore.Year() <= 1990)
	require.True(t, leaf.NotAfter.Year() >= 2100)
}
