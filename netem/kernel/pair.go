//go:build linux

package kernel

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/nuvirahub/latencylab/netem"
)

// DefaultMTU is the TUN devices' MTU when Config.MTU is zero: Ethernet's, so
// that TCP segments have the size they have on a real path.
const DefaultMTU = 1500

// tunName is the TUN device's name inside each namespace. Device names are
// per namespace, so every pair can use the same one.
const tunName = "lab0"

// Config configures a Pair. Its zero value is a pair joined by two perfect
// links.
type Config struct {
	// AtoB carries the IP packets namespace A sends to B, BtoA the
	// replies. Precise is always set (this is real time). Empty names
	// become "a-to-b" and "b-to-a", so that two links of one seed draw
	// different random numbers.
	AtoB, BtoA netem.LinkConfig
	// MTU of both TUN devices. Default DefaultMTU.
	MTU int
}

// Pair is two network namespaces, A and B, joined by netem links. Each holds
// a TUN device with one address of a /30; whatever A sends to B's address
// (and back) crosses the links, and nothing else leaves the namespaces. A
// Pair runs one reader goroutine per device and the links' goroutines;
// Close ends and waits for all of them and removes the namespaces.
type Pair struct {
	nsA, nsB     string
	addrA, addrB netip.Addr
	rate         int64 // AtoB's bottleneck rate in bit/s, 0 when it has none
	mtu          int

	tunA, tunB *os.File
	ab, ba     *netem.Link
	readers    sync.WaitGroup

	// mu guards undo against a Close from the signal handler while New
	// is still setting up.
	mu        sync.Mutex
	undo      []func() error // what New did, in order; Close undoes it backwards
	closed    bool
	closeOnce sync.Once
	closeErr  error
}

// seq numbers the pairs of this process, so that names and subnets are
// unique per run and parallel tests do not collide.
var seq atomic.Uint32

// sweepStale makes a process's first pair remove what killed runs left.
var sweepStale sync.Once

// New creates the namespaces and devices and starts moving packets. On
// error, everything it created is removed again. A process's first New
// also removes the namespaces of runs that died without cleaning up, as
// after a SIGKILL (see Sweep); their TUN devices, not persistent, went with
// the dead process's file descriptors.
func New(cfg Config) (_ *Pair, err error) {
	if err := Available(); err != nil {
		return nil, err
	}
	// A failure here only leaves stale names behind, which cost nothing
	// but the names; Sweep called on its own reports it.
	sweepStale.Do(func() { _, _ = Sweep() })
	if cfg.MTU == 0 {
		cfg.MTU = DefaultMTU
	}
	if cfg.MTU < 576 || cfg.MTU > 65535 {
		return nil, fmt.Errorf("kernel: MTU %d out of range 576..65535", cfg.MTU)
	}
	if cfg.AtoB.Name == "" {
		cfg.AtoB.Name = "a-to-b"
	}
	if cfg.BtoA.Name == "" {
		cfg.BtoA.Name = "b-to-a"
	}
	// Real kernel traffic, real time: a runtime timer may fire a
	// millisecond late, which a 1 ms delay cannot afford.
	cfg.AtoB.Precise, cfg.BtoA.Precise = true, true

	n := seq.Add(1)
	pid := os.Getpid()
	base := fmt.Sprintf("%s%d-%d", namePrefix, pid, n)
	p := &Pair{nsA: base + "-a", nsB: base + "-b", mtu: cfg.MTU}
	p.addrA, p.addrB = subnet(pid, n)
	p.rate = bottleneckRate(cfg.AtoB.Impairments)

	// Register before creating anything, so that a signal arriving in the
	// middle of setup still removes what exists by then.
	register(p)
	defer func() {
		if err != nil {
			p.Close()
		}
	}()

	for _, side := range []struct {
		ns   string
		addr netip.Addr
		tun  **os.File
	}{{p.nsA, p.addrA, &p.tunA}, {p.nsB, p.addrB, &p.tunB}} {
		if err := addNamespace(side.ns); err != nil {
			return nil, err
		}
		if err := p.pushUndo(func() error { return delNamespace(side.ns) }); err != nil {
			return nil, err
		}
		f, err := openTUN(side.ns, tunName)
		if err != nil {
			return nil, err
		}
		// The device lives as long as its file is open (it holds the
		// namespace too), so closing it comes before deleting the namespace.
		if err := p.pushUndo(f.Close); err != nil {
			return nil, err
		}
		*side.tun = f
		if err := configure(side.ns, tunName, side.addr, cfg.MTU); err != nil {
			return nil, err
		}
	}

	fromA := &net.IPAddr{IP: p.addrA.AsSlice()}
	fromB := &net.IPAddr{IP: p.addrB.AsSlice()}
	if p.ab, err = netem.NewLink(cfg.AtoB, deliverTo(p.tunB)); err != nil {
		return nil, fmt.Errorf("kernel: link A to B: %w", err)
	}
	if err := p.pushUndo(p.ab.Close); err != nil {
		return nil, err
	}
	if p.ba, err = netem.NewLink(cfg.BtoA, deliverTo(p.tunA)); err != nil {
		return nil, fmt.Errorf("kernel: link B to A: %w", err)
	}
	if err := p.pushUndo(p.ba.Close); err != nil {
		return nil, err
	}
	p.readers.Add(2)
	go p.forward(p.tunA, p.ab, fromA, fromB)
	go p.forward(p.tunB, p.ba, fromB, fromA)
	// Readers end when their files close. Close stops them first, so that
	// no packet enters a link that is closing; the files' own undo steps
	// then find them closed.
	if err := p.pushUndo(func() error {
		p.tunA.Close()
		p.tunB.Close()
		p.readers.Wait()
		return nil
	}); err != nil {
		return nil, err
	}
	return p, nil
}

// errClosedDuringSetup is New's error when the pair was closed (by a
// signal) before it was complete.
var errClosedDuringSetup = errors.New("kernel: pair closed during setup")

// pushUndo records how to undo a step of New. When the pair has already
// been closed, it undoes the step at once and returns an error that ends New.
func (p *Pair) pushUndo(f func() error) error {
	p.mu.Lock()
	if !p.closed {
		p.undo = append(p.undo, f)
		p.mu.Unlock()
		return nil
	}
	p.mu.Unlock()
	f()
	return errClosedDuringSetup
}

// subnet gives a pair its two addresses in 10.77.0.0/16, a /30 chosen from
// the process id and the pair's number. Isolation does not depend on it (each
// namespace has its own stack); distinct subnets only keep captures and
// error messages of parallel runs apart.
func subnet(pid int, n uint32) (a, b netip.Addr) {
	idx := (uint32(pid)<<4 + n) & 0x3fff // 16384 /30s in a /16
	ip := [4]byte{10, 77, byte(idx >> 6), byte(idx&0x3f) << 2}
	ip[3]++
	a = netip.AddrFrom4(ip)
	return a, a.Next()
}

// bottleneckRate finds the rate of a link's Rate impairment, which Bulk
// measures utilisation against.
func bottleneckRate(imps []netem.Impairment) int64 {
	for _, imp := range imps {
		if r, ok := imp.(*netem.Rate); ok {
			return r.Rate
		}
	}
	return 0
}

// forward reads IP packets from one TUN device into a link until the device
// closes.
func (p *Pair) forward(tun *os.File, l *netem.Link, from, to net.Addr) {
	defer p.readers.Done()
	buf := make([]byte, p.mtu+1) // one more: a longer packet would show as truncated
	for {
		n, err := tun.Read(buf)
		if err != nil {
			return // closed
		}
		// The link owns the packet's Data until it delivers it, so each
		// packet needs its own copy; at the lab's rates the allocation costs
		// far less than the system calls around it.
		pk := &netem.Packet{Data: slices.Clone(buf[:n]), From: from, To: to}
		if l.Send(pk) != nil {
			return // closing
		}
	}
}

// deliverTo writes the packets a link delivers into a TUN device, which hands
// them to that namespace's stack. A TUN write does not block (the kernel
// queues the packet on the receiving CPU's backlog), so it is done on the
// link's own goroutine, at the instant the link decided.
func deliverTo(tun *os.File) func(*netem.Packet) {
	return func(pk *netem.Packet) {
		_, _ = tun.Write(pk.Data) // fails only once closing, or like a drop
	}
}

// NamespaceA and NamespaceB are the namespaces' names, as `ip netns list`
// shows them (for `ip netns exec`).
func (p *Pair) NamespaceA() string { return p.nsA }

// NamespaceB: see NamespaceA.
func (p *Pair) NamespaceB() string { return p.nsB }

// AddrA and AddrB are the addresses of the TUN devices in A and B.
func (p *Pair) AddrA() netip.Addr { return p.addrA }

// AddrB: see AddrA.
func (p *Pair) AddrB() netip.Addr { return p.addrB }

// Rate is the bottleneck rate of the A-to-B link in bit/s at its start (0
// when it has none).
func (p *Pair) Rate() int64 { return p.rate }

// Stats returns the counters of the A-to-B and the B-to-A link. Sizes are
// whole IP packets.
func (p *Pair) Stats() (ab, ba netem.Stats) { return p.ab.Stats(), p.ba.Stats() }

// SetAtoB replaces the A-to-B link's impairments now (see netem.Link.Set).
func (p *Pair) SetAtoB(imps []netem.Impairment) error { return p.ab.Set(imps) }

// SetBtoA replaces the B-to-A link's impairments now.
func (p *Pair) SetBtoA(imps []netem.Impairment) error { return p.ba.Set(imps) }

// InA runs fn on an OS thread switched into namespace A and returns its
// error. Sockets fn creates belong to A and may be used from any goroutine
// afterwards; goroutines fn starts run in the process's own namespace.
func (p *Pair) InA(fn func() error) error { return inNamespace(p.nsA, fn) }

// InB runs fn inside namespace B: see InA.
func (p *Pair) InB(fn func() error) error { return inNamespace(p.nsB, fn) }

// Close stops the links and the readers and removes the devices and the
// namespaces. It returns the first error met but always goes through every
// step. Calling it again returns the first call's result.
func (p *Pair) Close() error {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		undo := p.undo
		p.undo = nil
		p.mu.Unlock()
		var errs []error
		for i := len(undo) - 1; i >= 0; i-- {
			if err := undo[i](); err != nil && !errors.Is(err, os.ErrClosed) {
				errs = append(errs, err)
			}
		}
		unregister(p)
		p.closeErr = errors.Join(errs...)
	})
	return p.closeErr
}

// String names the pair for logs.
func (p *Pair) String() string {
	return strings.TrimSuffix(p.nsA, "-a") + " (" + p.addrA.String() + " <-> " + p.addrB.String() + ")"
}
