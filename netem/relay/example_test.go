package relay_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"

	"github.com/nuvirahub/latencylab/netem/relay"
)

// A relay on a loopback UDP port: the broker registers the session, both
// peers bind, and a datagram from the agent reaches the viewer as it was
// sent. Over these Conns, quic-go runs as over any net.PacketConn.
func ExampleBind() {
	s := relay.New(relay.Config{})
	port, _ := net.ListenPacket("udp", "127.0.0.1:0")
	go s.ServeUDP(port)
	defer s.Close()

	var id relay.SessionID
	rand.Read(id[:])
	s.Register(id)

	ctx := context.Background()
	sock, _ := net.ListenPacket("udp", "127.0.0.1:0")
	agent, err := relay.Bind(ctx, sock, port.LocalAddr(), id, relay.Agent)
	if err != nil {
		panic(err)
	}
	defer agent.Close()
	sock, _ = net.ListenPacket("udp", "127.0.0.1:0")
	viewer, err := relay.Bind(ctx, sock, port.LocalAddr(), id, relay.Viewer)
	if err != nil {
		panic(err)
	}
	defer viewer.Close()

	agent.WriteTo([]byte("\x40 a QUIC packet"), nil) // the address is ignored
	buf := make([]byte, 1500)
	n, from, _ := viewer.ReadFrom(buf)
	fmt.Printf("%q from the relay: %v\n", buf[1:n], from == viewer.PeerAddr())

	// A session the broker never registered is refused; the socket stays
	// the caller's.
	stranger, _ := net.ListenPacket("udp", "127.0.0.1:0")
	defer stranger.Close()
	_, err = relay.Bind(ctx, stranger, port.LocalAddr(), relay.SessionID{1}, relay.Viewer)
	fmt.Println(errors.Is(err, relay.ErrRefused), err)
	// Output:
	// " a QUIC packet" from the relay: true
	// true relay: bind viewer to session 01000000: relay: session refused
}
