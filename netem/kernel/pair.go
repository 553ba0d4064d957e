//go:build linux

package kernel

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
	// different random numbers. When both leave Epoch zero, both get the
	// instant New makes them (Pair.Epoch), so that their timelines keep
	// step. A netem.Block among their impairments (a scenario's
	// block_udp) drops the UDP packets only, since these links carry
	// every protocol.
	AtoB, BtoA netem.LinkConfig
	// MTU of both TUN devices. Default DefaultMTU.
	MTU int
	// HostB makes B the process's own network namespace, the host's,
	// instead of a namespace of its own: B's TUN device is made there,
	// named by the kernel after HostDevice, and AddrB is then an address
	// of this machine, through which A reaches the machine's servers (those
	// listening on 0.0.0.0 or on AddrB) across the links. The pair's /30 is
	// one that no interface of the host overlaps. A still has no route
	// beyond the /30, nothing of the host's forwarding, NAT or firewall
	// changes, and the links carry only packets between AddrA and AddrB
	// (see Refused): from A, the host's address is reachable and nothing
	// else is.
	HostB bool
	// OwnSignals says the program handles SIGINT and SIGTERM itself and
	// closes the pair when it has done what they ask (lab shell first
	// waits for its command to end, which may still need the network): the
	// package then does not close this pair on those signals. Sweep still
	// removes what a killed program left.
	OwnSignals bool
}

// HostDevice is the pattern of the TUN device's name on the host side of a
// HostB pair: the kernel replaces %d with the first free number (labgw0,
// labgw1...), so parallel runs get distinct devices.
const HostDevice = "labgw%d"

// Pair is two network namespaces, A and B, joined by netem links; B may be
// the host's own namespace (Config.HostB). Each holds a TUN device with one
// address of a /30; whatever A sends to B's address (and back) crosses the
// links, and nothing else leaves the namespaces. A Pair runs one reader
// goroutine per device and the links' goroutines; Close ends and waits for
// all of them and removes the devices and the namespaces.
type Pair struct {
	nsA, nsB     string // nsB is "" when B is the host
	devB         string // B's TUN device
	addrA, addrB netip.Addr
	rate         int64 // AtoB's bottleneck rate in bit/s, 0 when it has none
	mtu          int
	epoch        time.Time // AtoB's epoch
	refused      atomic.Uint64
	ownSignals   bool

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
	cfg.AtoB, cfg.BtoA = ipLink(cfg.AtoB), ipLink(cfg.BtoA)

	n := seq.Add(1)
	pid := os.Getpid()
	base := fmt.Sprintf("%s%d-%d", namePrefix, pid, n)
	p := &Pair{nsA: base + "-a", nsB: base + "-b", devB: tunName, mtu: cfg.MTU, ownSignals: cfg.OwnSignals}
	p.addrA, p.addrB = subnet(pid, n)
	if cfg.HostB {
		p.nsB, p.devB = "", HostDevice
		// Another run may be choosing its subnet at the same time: the
		// lock lasts until B's address is on the host for others to see.
		unlock, err := lockHost()
		if err != nil {
			return nil, err
		}
		defer unlock()
		if p.addrA, p.addrB, err = freeSubnet(pid, n); err != nil {
			return nil, err
		}
	}
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
		ns, dev string
		addr    netip.Addr
		tun     **os.File
	}{{p.nsA, tunName, p.addrA, &p.tunA}, {p.nsB, p.devB, p.addrB, &p.tunB}} {
		if side.ns != "" {
			if err := addNamespace(side.ns); err != nil {
				return nil, err
			}
			if err := p.pushUndo(func() error { return delNamespace(side.ns) }); err != nil {
				return nil, err
			}
		}
		f, dev, err := openTUN(side.ns, side.dev)
		if err != nil {
			return nil, err
		}
		// The device lives as long as its file is open (it holds the
		// namespace too), so closing it comes before deleting the
		// namespace. On the host, its address and route go with it.
		if err := p.pushUndo(f.Close); err != nil {
			return nil, err
		}
		*side.tun = f
		if side.tun == &p.tunB {
			p.devB = dev
		}
		if err := configure(side.ns, dev, side.addr, cfg.MTU); err != nil {
			return nil, err
		}
	}

	if cfg.AtoB.Epoch.IsZero() && cfg.BtoA.Epoch.IsZero() {
		now := time.Now()
		cfg.AtoB.Epoch, cfg.BtoA.Epoch = now, now
	}
	p.epoch = cfg.AtoB.Epoch
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
	go p.forward(p.tunA, p.ab, fromA, fromB, p.addrA, p.addrB)
	go p.forward(p.tunB, p.ba, fromB, fromA, p.addrB, p.addrA)
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
// error messages of parallel runs apart. A HostB pair's addresses are on
// the host, where they must not collide: freeSubnet starts here.
func subnet(pid int, n uint32) (a, b netip.Addr) {
	return subnetAt(subnetIndex(pid, n))
}

// subnets is how many /30s 10.77.0.0/16 holds.
const subnets = 1 << 14

func subnetIndex(pid int, n uint32) uint32 { return (uint32(pid)<<4 + n) % subnets }

// subnetAt is the two usable addresses of the idx-th /30 of 10.77.0.0/16.
func subnetAt(idx uint32) (a, b netip.Addr) {
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
// closes. Only IPv4 packets from src to dst enter the link; any other is
// refused (see Refused).
func (p *Pair) forward(tun *os.File, l *netem.Link, from, to net.Addr, src, dst netip.Addr) {
	defer p.readers.Done()
	buf := make([]byte, p.mtu+1) // one more: a longer packet would show as truncated
	for {
		n, err := tun.Read(buf)
		if err != nil {
			return // closed
		}
		if !between(buf[:n], src, dst) {
			p.refused.Add(1)
			continue
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

// between reports whether pk is an IPv4 packet from src to dst. A route
// that a program in A adds through the device, or a packet the host
// forwards towards A, then meets a wall rather than a link: the pair joins
// its two addresses and nothing else.
func between(pk []byte, src, dst netip.Addr) bool {
	if len(pk) < 20 || pk[0]>>4 != 4 {
		return false
	}
	return netip.AddrFrom4([4]byte(pk[12:16])) == src && netip.AddrFrom4([4]byte(pk[16:20])) == dst
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
// shows them (for `ip netns exec`). NamespaceB is "" when B is the host's
// namespace (Config.HostB).
func (p *Pair) NamespaceA() string { return p.nsA }

// NamespaceB: see NamespaceA.
func (p *Pair) NamespaceB() string { return p.nsB }

// DeviceB is the name of B's TUN device: lab0 in a namespace of its own,
// after HostDevice on the host.
func (p *Pair) DeviceB() string { return p.devB }

// Epoch is the A-to-B link's time zero, which its timeline counts from.
func (p *Pair) Epoch() time.Time { return p.epoch }

// Refused counts the packets read from either device that were not between
// the pair's two addresses, and so never entered a link.
func (p *Pair) Refused() uint64 { return p.refused.Load() }

// CommandA returns a command that runs name with args inside namespace A,
// through `ip netns exec`, which also gives it A's view of /sys. The
// caller sets its standard streams and environment and starts it.
func (p *Pair) CommandA(name string, args ...string) (*exec.Cmd, error) {
	ip, err := ipCommand()
	if err != nil {
		return nil, err
	}
	return exec.Command(ip, append([]string{"netns", "exec", p.nsA, name}, args...)...), nil
}

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
func (p *Pair) SetAtoB(imps []netem.Impairment) error { return p.ab.Set(ipImpairments(imps)) }

// SetBtoA replaces the B-to-A link's impairments now.
func (p *Pair) SetBtoA(imps []netem.Impairment) error { return p.ba.Set(ipImpairments(imps)) }

// InA runs fn on an OS thread switched into namespace A and returns its
// error. Sockets fn creates belong to A and may be used from any goroutine
// afterwards; goroutines fn starts run in the process's own namespace.
func (p *Pair) InA(fn func() error) error { return inNamespace(p.nsA, fn) }

// InB runs fn inside namespace B: see InA. When B is the host's namespace,
// fn runs on the calling goroutine.
func (p *Pair) InB(fn func() error) error {
	if p.nsB == "" {
		return fn()
	}
	return inNamespace(p.nsB, fn)
}

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
	b := p.addrB.String()
	if p.nsB == "" {
		b = "host " + b + " on " + p.devB
	}
	return strings.TrimSuffix(p.nsA, "-a") + " (" + p.addrA.String() + " <-> " + b + ")"
}
