package nat_test

import (
	"fmt"
	"net/netip"

	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/netem/nat"
)

// A host on a home LAN asks a server on the internet which address it sees:
// the router's public address and the external port of the host's mapping.
// This runs in real time; in a testing/synctest bubble it runs the same.
func ExampleNew() {
	internet := netem.NewNetwork(1)
	defer internet.Close()
	lan := netem.NewNetwork(1)
	defer lan.Close()
	cfg := nat.PortRestrictedCone
	cfg.Seed = 1
	router, err := nat.New(lan, internet, netip.MustParseAddr("203.0.113.1"), cfg)
	if err != nil {
		panic(err)
	}
	defer router.Close()

	server := internet.MustListen("198.51.100.1:3478")
	host := lan.MustListen("192.168.1.10:5000")
	host.WriteTo([]byte("who am I?"), server.LocalAddr())

	buf := make([]byte, 64)
	_, seen, _ := server.ReadFrom(buf)
	fmt.Println("server sees", seen)
	server.WriteTo([]byte(seen.String()), seen)
	n, from, _ := host.ReadFrom(buf)
	fmt.Printf("host hears %q from %v\n", buf[:n], from)
	m := router.Mappings()[0]
	fmt.Println("mapping", m.Private, "->", m.Public)

	// Output:
	// server sees 203.0.113.1:30377
	// host hears "203.0.113.1:30377" from 198.51.100.1:3478
	// mapping 192.168.1.10:5000 -> 203.0.113.1:30377
}
