package netem

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// proxyTestTimeout bounds every blocking step of the real-time tests, so a
// bug fails the test instead of hanging it. Nothing is asserted about how
// long the steps take.
const proxyTestTimeout = 10 * time.Second

// proxyEcho is a UDP echo server on loopback that remembers which source
// addresses it heard from.
type proxyEcho struct {
	conn *net.UDPConn
	done chan struct{}

	mu      sync.Mutex
	sources map[netip.AddrPort]int
}

func newProxyEcho(t testing.TB) *proxyEcho {
	t.Helper()
	return newProxyEchoOn(t, net.IPv4(127, 0, 0, 1))
}

func newProxyEchoOn(t testing.TB, ip net.IP) *proxyEcho {
	t.Helper()
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: ip})
	require.NoError(t, err)
	e := &proxyEcho{conn: conn, done: make(chan struct{}), sources: map[netip.AddrPort]int{}}
	go func() {
		defer close(e.done)
		buf := make([]byte, maxUDPPayload)
		for {
			n, from, err := conn.ReadFromUDPAddrPort(buf)
			if err != nil {
				return // closed
			}
			e.mu.Lock()
			e.sources[from]++
			e.mu.Unlock()
			conn.WriteToUDPAddrPort(buf[:n], from)
		}
	}()
	t.Cleanup(func() {
		conn.Close()
		<-e.done
	})
	return e
}

func (e *proxyEcho) addr() string { return e.conn.LocalAddr().String() }

func (e *proxyEcho) heard() map[netip.AddrPort]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[netip.AddrPort]int, len(e.sources))
	for k, v := range e.sources {
		out[k] = v
	}
	return out
}

// newTestProxy starts a proxy to target and closes it at the end of the test.
func newTestProxy(t testing.TB, cfg ProxyConfig) *Proxy {
	t.Helper()
	p, err := NewProxy(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	return p
}

// proxyDial makes a client socket on loopback connected to the proxy.
func proxyDial(t testing.TB, p *Proxy) *net.UDPConn {
	t.Helper()
	c, err := net.DialUDP("udp", nil, p.Addr().(*net.UDPAddr))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// proxyRoundTrip sends payload and returns the next datagram received.
func proxyRoundTrip(t testing.TB, c *net.UDPConn, payload []byte) []byte {
	t.Helper()
	_, err := c.Write(payload)
	require.NoError(t, err)
	return proxyRead(t, c)
}

func proxyRead(t testing.TB, c *net.UDPConn) []byte {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(proxyTestTimeout)))
	buf := make([]byte, maxUDPPayload)
	n, err := c.Read(buf)
	require.NoError(t, err)
	return buf[:n]
}

// proxyWaitFor polls cond, yielding the processor in between, until it holds
// or proxyTestTimeout passes.
func proxyWaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(proxyTestTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		runtime.Gosched()
	}
}

func TestProxyEchoTwoClients(t *testing.T) {
	echo := newProxyEcho(t)
	p := newTestProxy(t, ProxyConfig{
		Target:  echo.addr(),
		Forward: LinkConfig{Impairments: []Impairment{&Delay{Delay: 5 * time.Millisecond}}},
		Reverse: LinkConfig{Impairments: []Impairment{&Delay{Delay: 3 * time.Millisecond}}},
	})
	require.Equal(t, "127.0.0.1", p.Addr().(*net.UDPAddr).IP.String())
	clients := []*net.UDPConn{proxyDial(t, p), proxyDial(t, p)}

	// Both clients send all their packets first, interleaved, so that both
	// mappings carry traffic at once; then each reads its own replies.
	const n = 50
	payload := func(client, i int) []byte {
		b := bytes.Repeat([]byte{byte(client)}, 100+i*20)
		copy(b, fmt.Sprintf("client %d packet %d", client, i))
		return b
	}
	for i := range n {
		for ci, c := range clients {
			_, err := c.Write(payload(ci, i))
			require.NoError(t, err)
		}
	}
	for ci, c := range clients {
		for i := range n {
			// The links keep order, and loopback does not reorder.
			require.Equal(t, payload(ci, i), proxyRead(t, c), "client %d packet %d", ci, i)
		}
	}

	heard := echo.heard()
	require.Len(t, heard, 2, "one upstream socket per client")
	for src, count := range heard {
		require.Equal(t, n, count)
		require.NotEqual(t, p.Addr().(*net.UDPAddr).AddrPort(), src)
	}
	require.Equal(t, 2, p.Clients())

	fwd, rev := p.Stats()
	require.Equal(t, uint64(2*n), fwd.Offered.Packets)
	require.Equal(t, fwd.Offered, fwd.Delivered)
	require.Equal(t, fwd.Offered, rev.Delivered)
	require.Zero(t, p.Refused())
}

// A routed client reaches its own target through the shared links, and
// that target may speak first: it sends to the address Route returned.
// The proxy's Target sees nothing of it.
func TestProxyRoute(t *testing.T) {
	echo := newProxyEcho(t)
	p := newTestProxy(t, ProxyConfig{Target: echo.addr()})
	own, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer own.Close()
	client := proxyDial(t, p)
	clientAddr := client.LocalAddr().(*net.UDPAddr).AddrPort()
	via, err := p.Route(clientAddr, own.LocalAddr().(*net.UDPAddr))
	require.NoError(t, err)
	_, err = p.Route(clientAddr, own.LocalAddr().(*net.UDPAddr))
	require.Error(t, err, "a client is routed once")

	// The target first, then the client's reply.
	_, err = own.WriteTo([]byte("hello from the target"), via)
	require.NoError(t, err)
	require.Equal(t, []byte("hello from the target"), proxyRead(t, client))
	_, err = client.Write([]byte("and back"))
	require.NoError(t, err)
	require.NoError(t, own.SetReadDeadline(time.Now().Add(proxyTestTimeout)))
	buf := make([]byte, 100)
	n, from, err := own.ReadFrom(buf)
	require.NoError(t, err)
	require.Equal(t, "and back", string(buf[:n]))
	require.Equal(t, via.String(), from.String())

	// An ordinary client still reaches the Target, over the same links.
	require.Equal(t, []byte("echo"), proxyRoundTrip(t, proxyDial(t, p), []byte("echo")))
	require.Len(t, echo.heard(), 1)
	fwd, rev := p.Stats()
	require.Equal(t, uint64(2), fwd.Delivered.Packets)
	require.Equal(t, uint64(2), rev.Delivered.Packets)

	require.NoError(t, p.Close())
	_, err = p.Route(netip.MustParseAddrPort("127.0.0.1:9"), own.LocalAddr().(*net.UDPAddr))
	require.ErrorIs(t, err, ErrClosed)
}

func TestProxyCarriesEverySize(t *testing.T) {
	echo := newProxyEcho(t)
	p := newTestProxy(t, ProxyConfig{Target: echo.addr()})
	c := proxyDial(t, p)
	// Empty, tiny, pooled-buffer size, jumbo (not recycled) and the largest
	// IPv4 datagram, which loopback's 64 KiB MTU carries; twice each so
	// that recycled packets are reused.
	for range 2 {
		for _, size := range []int{0, 1, proxyBufCap, proxyBufCap + 1, 9000, maxUDPPayload} {
			msg := bytes.Repeat([]byte{byte(size)}, size)
			for i := range msg {
				msg[i] = byte(i * 7)
			}
			require.Equal(t, msg, proxyRoundTrip(t, c, msg), "size %d", size)
		}
	}
}

func TestProxyIPv6Loopback(t *testing.T) {
	if c, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback}); err != nil {
		t.Skip("no IPv6 loopback:", err)
	} else {
		c.Close()
	}
	echo := newProxyEchoOn(t, net.IPv6loopback)
	p := newTestProxy(t, ProxyConfig{
		Listen:  "[::1]:0",
		Target:  echo.addr(),
		Reverse: LinkConfig{Impairments: []Impairment{&Delay{Delay: time.Millisecond}}},
	})
	require.Equal(t, "::1", p.Addr().(*net.UDPAddr).IP.String())
	a, b := proxyDial(t, p), proxyDial(t, p)
	for i := range 20 {
		msg := []byte(fmt.Sprintf("v6 %d", i))
		require.Equal(t, msg, proxyRoundTrip(t, a, msg))
		require.Equal(t, append(msg, 'b'), proxyRoundTrip(t, b, append(msg, 'b')))
	}
	require.Len(t, echo.heard(), 2)
}

func TestProxySetChangesLaterPackets(t *testing.T) {
	echo := newProxyEcho(t)
	p := newTestProxy(t, ProxyConfig{Target: echo.addr()})
	c := proxyDial(t, p)

	require.Equal(t, []byte("a"), proxyRoundTrip(t, c, []byte("a")))

	// A delay can only lengthen the round trip, so this lower bound holds
	// however slow the machine is.
	require.NoError(t, p.SetForward([]Impairment{&Delay{Delay: 30 * time.Millisecond}}))
	require.NoError(t, p.SetReverse([]Impairment{&Delay{Delay: 20 * time.Millisecond}}))
	start := time.Now()
	require.Equal(t, []byte("b"), proxyRoundTrip(t, c, []byte("b")))
	require.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond)

	// An hour's delay: the packet is certainly still inside the link when
	// the proxy closes, which counts it.
	require.NoError(t, p.SetForward([]Impairment{&Delay{Delay: time.Hour}}))
	_, err := c.Write([]byte("c"))
	require.NoError(t, err)
	proxyWaitFor(t, "the packet to enter the forward link", func() bool {
		fwd, _ := p.Stats()
		return fwd.Offered.Packets == 3
	})
	fwd, _ := p.Stats()
	require.Equal(t, Counter{Packets: 1, Bytes: 1}, fwd.InFlight)
	require.Equal(t, uint64(2), fwd.Delivered.Packets)

	require.Error(t, p.SetForward([]Impairment{&Delay{Delay: -1}}), "an invalid set is refused")

	require.NoError(t, p.Close())
	fwd, _ = p.Stats()
	require.Equal(t, Counter{Packets: 1, Bytes: 1}, fwd.Dropped[DropClosed])
	require.ErrorIs(t, p.SetForward(nil), ErrClosed)
	require.ErrorIs(t, p.SetReverse(nil), ErrClosed)
}

func TestProxyBlockAndUnblock(t *testing.T) {
	echo := newProxyEcho(t)
	p := newTestProxy(t, ProxyConfig{Target: echo.addr(), Forward: LinkConfig{Impairments: []Impairment{&Block{}}}})
	c := proxyDial(t, p)
	for range 5 {
		_, err := c.Write([]byte("blocked"))
		require.NoError(t, err)
	}
	proxyWaitFor(t, "the blocked packets", func() bool {
		fwd, _ := p.Stats()
		return fwd.Dropped[DropBlocked].Packets == 5
	})
	require.NoError(t, p.SetForward(nil))
	require.Equal(t, []byte("open"), proxyRoundTrip(t, c, []byte("open")), "nothing blocked arrives, the next one does")
	require.Equal(t, 1, len(echo.heard()))
}

// proxyGoroutines lists the goroutines running the proxy's code.
func proxyGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "netem.(*Proxy)") || strings.Contains(g, "netem.(*proxyWriter)") {
			out = append(out, g)
		}
	}
	return out
}

func TestProxyCloseEndsEverything(t *testing.T) {
	echo := newProxyEcho(t)
	p, err := NewProxy(ProxyConfig{
		Target:  echo.addr(),
		Forward: LinkConfig{Impairments: []Impairment{&Delay{Delay: time.Minute}}},
	})
	require.NoError(t, err)
	for range 3 {
		c := proxyDial(t, p)
		_, err := c.Write([]byte("x"))
		require.NoError(t, err)
	}
	proxyWaitFor(t, "three mappings", func() bool { return p.Clients() == 3 })
	// The client reader, a reader per mapping, two writers (earlier tests'
	// proxies are closed, but their goroutines may be finishing).
	proxyWaitFor(t, "the proxy's six goroutines", func() bool { return len(proxyGoroutines()) == 1+3+2 })

	// Close returns although every reader is blocked in a read and every
	// packet is a minute from delivery.
	closed := make(chan error)
	go func() { closed <- p.Close() }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(proxyTestTimeout):
		t.Fatal("Close did not return")
	}
	// Close waited for its goroutines; they may still be unwinding their
	// last frame.
	proxyWaitFor(t, "the proxy's goroutines to end", func() bool { return len(proxyGoroutines()) == 0 })
	require.ErrorIs(t, p.fwd.Send(&Packet{}), ErrClosed)
	require.ErrorIs(t, p.rev.Send(&Packet{}), ErrClosed)
	fwd, _ := p.Stats()
	require.Equal(t, uint64(3), fwd.Dropped[DropClosed].Packets)
	require.NoError(t, p.Close(), "a second Close is harmless")
}

func TestProxyClientTableIsBounded(t *testing.T) {
	t.Run("refuses while the mappings are active", func(t *testing.T) {
		echo := newProxyEcho(t)
		p := newTestProxy(t, ProxyConfig{Target: echo.addr(), MaxClients: 2})
		a, b, c := proxyDial(t, p), proxyDial(t, p), proxyDial(t, p)
		require.Equal(t, []byte("a"), proxyRoundTrip(t, a, []byte("a")))
		require.Equal(t, []byte("b"), proxyRoundTrip(t, b, []byte("b")))
		_, err := c.Write([]byte("refused"))
		require.NoError(t, err)
		// The proxy reads its socket in order: once a's next echo is back,
		// c's datagram has been handled.
		require.Equal(t, []byte("a2"), proxyRoundTrip(t, a, []byte("a2")))
		require.Equal(t, Counter{Packets: 1, Bytes: 7}, p.Refused())
		require.Equal(t, 2, p.Clients())
	})

	t.Run("replaces an idle mapping", func(t *testing.T) {
		echo := newProxyEcho(t)
		p := newTestProxy(t, ProxyConfig{Target: echo.addr(), MaxClients: 2, IdleTimeout: time.Nanosecond})
		a, b, c := proxyDial(t, p), proxyDial(t, p), proxyDial(t, p)
		require.Equal(t, []byte("a"), proxyRoundTrip(t, a, []byte("a")))
		require.Equal(t, []byte("b"), proxyRoundTrip(t, b, []byte("b")))
		require.Equal(t, []byte("c"), proxyRoundTrip(t, c, []byte("c")), "a, the least recent, made room")
		require.Equal(t, 2, p.Clients())
		require.Zero(t, p.Refused())
		require.Equal(t, []byte("a2"), proxyRoundTrip(t, a, []byte("a2")), "a comes back with a new mapping")
		require.Len(t, echo.heard(), 4, "a fresh upstream socket for each new mapping")
	})
}

func TestProxyConfigErrors(t *testing.T) {
	_, err := NewProxy(ProxyConfig{})
	require.ErrorContains(t, err, "target")
	_, err = NewProxy(ProxyConfig{Target: "127.0.0.1:9", Forward: LinkConfig{Impairments: []Impairment{&Delay{Delay: -1}}}})
	require.ErrorContains(t, err, "negative")
	_, err = NewProxy(ProxyConfig{Target: "127.0.0.1:9", Reverse: LinkConfig{Impairments: []Impairment{&Spikes{}}}})
	require.ErrorContains(t, err, "every must be positive")
	_, err = NewProxy(ProxyConfig{Target: "127.0.0.1:9", Listen: "127.0.0.1:notaport"})
	require.Error(t, err)
}

// ExampleProxy impairs a loopback UDP exchange with a 20 ms one-way delay
// each way.
func ExampleProxy() {
	echo, _ := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	defer echo.Close()
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := echo.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			echo.WriteToUDPAddrPort(buf[:n], from)
		}
	}()

	p, _ := NewProxy(ProxyConfig{
		Target:  echo.LocalAddr().String(),
		Forward: LinkConfig{Impairments: []Impairment{&Delay{Delay: 20 * time.Millisecond}}},
		Reverse: LinkConfig{Impairments: []Impairment{&Delay{Delay: 20 * time.Millisecond}}},
	})
	defer p.Close()

	c, _ := net.DialUDP("udp", nil, p.Addr().(*net.UDPAddr))
	defer c.Close()
	start := time.Now()
	c.Write([]byte("ping"))
	buf := make([]byte, 1500)
	n, _ := c.Read(buf)
	fmt.Println(string(buf[:n]), time.Since(start) >= 40*time.Millisecond)
	// Output: ping true
}

// With no listen address the proxy binds loopback, never every interface
// (docs/security.md).
func TestProxyListensOnLoopbackByDefault(t *testing.T) {
	p, err := NewProxy(ProxyConfig{Target: "127.0.0.1:9"})
	require.NoError(t, err)
	defer p.Close()
	ap, err := netip.ParseAddrPort(p.Addr().String())
	require.NoError(t, err)
	require.True(t, ap.Addr().IsLoopback(), "%v", ap)
}
