//go:build linux

package netem

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// quic-go's out-of-band API. quic-go runs path MTU discovery only on a
// conn that sets DF, and it decides that by calling setsockopt
// (IP_MTU_DISCOVER) on the descriptor a conn's SyscallConn hands to
// Control; it reads ECN bits and sends GSO batches only through an
// OOBCapablePacketConn (ReadMsgUDP, WriteMsgUDP, and ReadBatch or a real
// socket behind SyscallConn). A PacketConn here is all of these, so that
// quic-go treats it as the UDP socket it stands for: its packets carry DF,
// links drop those above their MTU, and quic-go's DPLPMTUD finds the
// path's size as it would on a real one.

var (
	_ interface {
		SyscallConn() (syscall.RawConn, error)
		ReadMsgUDP(b, oob []byte) (n, oobn, flags int, addr *net.UDPAddr, err error)
		WriteMsgUDP(b, oob []byte, addr *net.UDPAddr) (n, oobn int, err error)
		ReadBatch(ms []ipv4.Message, flags int) (int, error)
	} = (*PacketConn)(nil)
)

// socketOptions is a real UDP socket, never bound, that exists only to take
// the socket options a PacketConn's owner sets. quic-go sets them with
// setsockopt on a descriptor and reads them back with getsockopt (buffer
// sizes, GSO support); no fake descriptor would answer, and refusing would
// make quic-go run without DF. The endpoint reads back the options it
// models (DF, IP_RECVTOS) after each Control. The socket sends and
// receives nothing: the endpoint's packets cross the in-memory network. It
// is made on the first Control, so endpoints nobody asks for options cost
// no descriptor; where a process may not make a UDP socket, Control fails,
// and quic-go refuses the endpoint (its Transport does not start).
type socketOptions struct {
	mu   sync.Mutex
	fd   int // -1 once closed; valid only when made
	made bool
}

func (o *socketOptions) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.made && o.fd >= 0 {
		unix.Close(o.fd)
	}
	o.made, o.fd = true, -1
}

// SyscallConn returns a syscall.RawConn whose Control runs against a real,
// unbound UDP socket of the endpoint's address family, made for it, so
// that socket options can be set and read (see socketOptions). Options
// the in-memory network models take effect on the endpoint: IP_MTU_DISCOVER
// (IPV6_MTU_DISCOVER) set to DO or PROBE makes it send with DF, and
// IP_RECVTOS (IPV6_RECVTCLASS) makes ReadMsgUDP report the ECN bits. Its
// Read and Write fail: nothing is read or written through the socket.
func (c *PacketConn) SyscallConn() (syscall.RawConn, error) {
	return optionsConn{c}, nil
}

type optionsConn struct{ c *PacketConn }

var errNoSocketIO = errors.New("netem: an in-memory endpoint's socket only holds options: use ReadMsgUDP and WriteMsgUDP")

// Control implements syscall.RawConn.
func (r optionsConn) Control(f func(fd uintptr)) error {
	c, o := r.c, &r.c.opts
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.made {
		family := unix.AF_INET
		if !c.local.Addr().Unmap().Is4() {
			family = unix.AF_INET6
		}
		fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
		if err != nil {
			return c.opError("control", fmt.Errorf("socket for options: %w", err))
		}
		o.fd, o.made = fd, true
	}
	if o.fd < 0 {
		return c.opError("control", net.ErrClosed)
	}
	f(uintptr(o.fd))
	df, recvTOS := readOptions(o.fd, c.local.Addr().Unmap().Is4())
	c.mu.Lock()
	c.df, c.recvTOS = df, recvTOS
	c.mu.Unlock()
	return nil
}

// readOptions reads back the options the endpoint models.
func readOptions(fd int, v4 bool) (df, recvTOS bool) {
	if v4 {
		mode, err := unix.GetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MTU_DISCOVER)
		df = err == nil && (mode == unix.IP_PMTUDISC_DO || mode == unix.IP_PMTUDISC_PROBE)
		tos, err := unix.GetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_RECVTOS)
		recvTOS = err == nil && tos != 0
		return df, recvTOS
	}
	mode, err := unix.GetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_MTU_DISCOVER)
	df = err == nil && (mode == unix.IPV6_PMTUDISC_DO || mode == unix.IPV6_PMTUDISC_PROBE)
	tclass, err := unix.GetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_RECVTCLASS)
	recvTOS = err == nil && tclass != 0
	return df, recvTOS
}

// Read implements syscall.RawConn; it fails (errNoSocketIO).
func (optionsConn) Read(func(fd uintptr) bool) error { return errNoSocketIO }

// Write implements syscall.RawConn; it fails (errNoSocketIO).
func (optionsConn) Write(func(fd uintptr) bool) error { return errNoSocketIO }

// ReadMsgUDP reads one datagram as net.UDPConn's does. With IP_RECVTOS
// (IPV6_RECVTCLASS) set, oob receives the ECN bits as the kernel's
// control message; flags has MSG_TRUNC when b was too short.
func (c *PacketConn) ReadMsgUDP(b, oob []byte) (n, oobn, flags int, addr *net.UDPAddr, err error) {
	p, err := c.next(true)
	if err != nil {
		return 0, 0, 0, nil, err
	}
	n, oobn, flags, addr = c.unpack(p, b, oob)
	return n, oobn, flags, addr, nil
}

// ReadBatch reads up to len(ms) datagrams, waiting for the first only, as
// golang.org/x/net/ipv4's PacketConn does with recvmmsg. quic-go reads
// through it. Each message's first buffer takes the payload.
func (c *PacketConn) ReadBatch(ms []ipv4.Message, _ int) (int, error) {
	for i := range ms {
		p, err := c.next(i == 0)
		if err != nil && i > 0 {
			return i, nil // closed meanwhile: the next read says so
		}
		if err != nil {
			return 0, err
		}
		if p == nil {
			return i, nil
		}
		var b []byte
		if len(ms[i].Buffers) > 0 {
			b = ms[i].Buffers[0]
		}
		ms[i].N, ms[i].NN, ms[i].Flags, ms[i].Addr = c.unpack(p, b, ms[i].OOB)
	}
	return len(ms), nil
}

// unpack copies p into b and its control messages into oob, and releases
// it.
func (c *PacketConn) unpack(p *Packet, b, oob []byte) (n, oobn, flags int, addr *net.UDPAddr) {
	n = copy(b, p.Data)
	if n < len(p.Data) {
		flags |= unix.MSG_TRUNC
	}
	addr, _ = p.From.(*net.UDPAddr)
	c.mu.Lock()
	recvTOS := c.recvTOS
	c.mu.Unlock()
	if recvTOS {
		if v4 := c.local.Addr().Unmap().Is4(); len(oob) >= tosCmsgSpace(v4) {
			oobn = len(appendTOSCmsg(oob[:0], c.receivedECN(p), v4))
		}
	}
	p.release()
	return n, oobn, flags, addr
}

// WriteMsgUDP sends b to addr as net.UDPConn's does, reading the control
// messages a sender passes: UDP_SEGMENT (GSO) splits b into datagrams of
// that size, sent at once one after another, as the kernel does; IP_TOS
// and IPV6_TCLASS give the ECN bits (see sentECN). Packet info (the source
// address) is ignored: the endpoint has one address.
func (c *PacketConn) WriteMsgUDP(b, oob []byte, addr *net.UDPAddr) (n, oobn int, err error) {
	if addr == nil {
		return 0, 0, c.opError("write", errors.New("missing address"))
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, 0, c.opError("write", err)
	}
	segment := len(b)
	for _, m := range msgs {
		if m.Header.Level == unix.IPPROTO_UDP && m.Header.Type == unix.UDP_SEGMENT && len(m.Data) >= 2 {
			if s := int(binary.NativeEndian.Uint16(m.Data)); s > 0 {
				segment = s
			}
		}
	}
	ecn := c.sentECN(cmsgECN(oob))
	if len(b) == 0 { // an empty datagram is one datagram
		return 0, len(oob), c.write(b, addr, ecn)
	}
	for rest := b; len(rest) > 0; {
		k := min(segment, len(rest))
		if err := c.write(rest[:k], addr, ecn); err != nil {
			return 0, 0, err
		}
		rest = rest[k:]
	}
	return len(b), len(oob), nil
}
