// Package tcplike is a model of TCP's bulk transfer for the in-memory
// network, where there is no kernel to run TCP: inside a testing/synctest
// bubble the lab has only datagrams. A server sends what a client asks for
// (a number of bytes, or as much as it can until it is closed) in
// MSS-sized segments carried as datagrams, under a congestion window grown
// and cut by Reno (RFC 5681) or CUBIC (RFC 9438, with Linux's HyStart
// leaving slow start on a delay increase); the client acknowledges with a
// cumulative acknowledgement and up to three SACK blocks (RFC 2018), every
// second segment or 40 ms after a single one, as Linux's receiver does
// (its first 16 segments, one out of order and one filling a hole at
// once). Loss is found as RFC 6675 finds it (three segments above a hole
// SACKed), recovered in one fast recovery per window, and by a
// retransmission timeout after RFC 6298 (200 ms at least, as Linux). The
// datagrams weigh what the segments would in IP packets without the IP
// header, the part a datagram's UDP/IP headers leave out too: 32 bytes of
// TCP header (with timestamps) and the payload, 40-byte SYNs.
//
// A server may send ECN-capable segments (Config.ECN, over the in-memory
// network's PacketConn): the client acknowledges each CE-marked segment at
// once, echoing it (as a DCTCP receiver does when the CE state changes, so
// that with delayed acknowledgements one echo still stands for one marked
// segment), and the sender answers classic ECN as a
// loss, once per window (RFC 3168), or L4S ECN with DCTCP's scalable
// response (RFC 8257: the window cut by alpha/2 once per window, alpha the
// moving average of the fraction of segments marked, gain 1/16, with
// Reno's growth of one segment per round trip).
//
// What it leaves out of kernel TCP, and so of what a bulk flow over it
// shows: pacing, proportional rate reduction (the window drops to its new
// size at once on a loss), RACK's time-based loss detection and tail loss
// probes, window scaling and receive-buffer autotuning (a fixed receive
// window, Config.ReceiveWindow), the slow-start restart after idle, and
// BBR, which needs the kernel (the lab's kernel mode). It is a model to
// put a TCP-like load on the lab's links, not an implementation of TCP;
// where a test needs real TCP, the kernel mode runs it.
package tcplike

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// Congestion controllers of the model.
const (
	Reno  = "reno"
	CUBIC = "cubic"
)

// Controllers lists the congestion controllers the model has.
var Controllers = []string{Reno, CUBIC}

// Sizes of the model's segments as the links count them: what the segment
// would weigh in an IP packet, without the IP header.
const (
	// MSS is the payload of a full segment: Linux's for a 1500-byte MTU
	// with timestamps.
	MSS = 1448
	// HeaderBytes is a segment's TCP header with the timestamp option.
	HeaderBytes = 32
	// synBytes is a SYN's or SYN-ACK's header with its options.
	synBytes = 40
	// requestBytes is the request's segment: the 3GPP HTTP traffic
	// model's 350-byte request.
	requestBytes = HeaderBytes + 350
)

// Config configures a server or a client. Its zero value is CUBIC with
// Linux's initial window and a 3 MiB receive window.
type Config struct {
	// Congestion is Reno or CUBIC (empty: CUBIC, Linux's default).
	Congestion string
	// InitialWindow is the first window in segments (0: 10, RFC 6928).
	InitialWindow int
	// ReceiveWindow bounds the bytes in flight, as the receiver's
	// advertised window would (0: 3 MiB, half of Linux's largest
	// receive buffer, tcp_rmem's 6 MiB).
	ReceiveWindow int
	// MinRTO is the retransmission timeout's floor (0: 200 ms, Linux's).
	MinRTO time.Duration
	// ECN makes the data segments ECN-capable: empty for none (Not-ECT),
	// ECNClassic (ECT(0), RFC 3168's response) or ECNL4S (ECT(1), DCTCP's
	// scalable response). It needs a PacketConn that can set the ECN
	// field (the in-memory network's); on another the segments go out
	// Not-ECT.
	ECN string
}

// The ECN modes of Config.ECN.
const (
	ECNClassic = "classic"
	ECNL4S     = "l4s"
)

// ECNModes lists the ECN modes of the model.
var ECNModes = []string{ECNClassic, ECNL4S}

// Defaults of Config.
const (
	DefaultInitialWindow = 10
	DefaultReceiveWindow = 3 << 20
	DefaultMinRTO        = 200 * time.Millisecond
	// initialRTO is the timeout before any round trip was measured, and
	// the handshake's first retransmission (RFC 6298).
	initialRTO = time.Second
	// maxRTO caps the backed-off timeout (Linux's TCP_RTO_MAX).
	maxRTO = 120 * time.Second
)

func (c Config) withDefaults() (Config, error) {
	switch c.Congestion {
	case "":
		c.Congestion = CUBIC
	case Reno, CUBIC:
	default:
		return c, fmt.Errorf("tcplike: congestion controller %q: the model has reno and cubic", c.Congestion)
	}
	switch c.ECN {
	case "", ECNClassic, ECNL4S:
	default:
		return c, fmt.Errorf("tcplike: ECN %q: the model has classic and l4s", c.ECN)
	}
	if c.InitialWindow < 0 || c.ReceiveWindow < 0 || c.MinRTO < 0 {
		return c, errors.New("tcplike: negative initial window, receive window or minimum timeout")
	}
	if c.InitialWindow == 0 {
		c.InitialWindow = DefaultInitialWindow
	}
	if c.ReceiveWindow == 0 {
		c.ReceiveWindow = DefaultReceiveWindow
	}
	if c.MinRTO == 0 {
		c.MinRTO = DefaultMinRTO
	}
	return c, nil
}

// Segment types.
const (
	typeSYN    = 1
	typeSYNACK = 2
	typeReq    = 3 // the request: the ACK of the SYN-ACK with the size asked for
	typeData   = 4
	typeAck    = 5
)

// maxSACK is how many SACK blocks an acknowledgement carries, as TCP's
// with timestamps has room for.
const maxSACK = 3

// header is every segment's start: type, connection, and the fields of
// its type.
//
//	0     type
//	1     flags (ack: flagECE)
//	2-3   unused
//	4-7   connection id
//	8-15  seq (data: segment number; ack: cumulative, the next expected;
//	      request: the bytes asked for)
//	16-23 timestamp (data: the sender's; ack: the one echoed)
//	24    ack: the number of SACK blocks, each 16 bytes from 32
//	28-31 data: the payload's length
const headerLen = 32

// flagECE on an acknowledgement says the segment it answers arrived CE.
const flagECE = 1

type segment struct {
	typ    byte
	flags  byte
	conn   uint32
	seq    int64
	ts     int64
	blocks [][2]int64 // ack: SACKed segments [start, end)
	length int        // data: payload bytes
}

// encode writes s into buf, padded with zeros to size bytes (at least the
// header and the blocks).
func (s segment) encode(buf []byte, size int) []byte {
	need := max(size, headerLen+16*len(s.blocks))
	if cap(buf) < need {
		buf = make([]byte, need)
	}
	buf = buf[:need]
	clear(buf)
	le := binary.LittleEndian
	buf[0] = s.typ
	buf[1] = s.flags
	le.PutUint32(buf[4:], s.conn)
	le.PutUint64(buf[8:], uint64(s.seq))
	le.PutUint64(buf[16:], uint64(s.ts))
	buf[24] = byte(len(s.blocks))
	le.PutUint32(buf[28:], uint32(s.length))
	for i, b := range s.blocks {
		le.PutUint64(buf[headerLen+16*i:], uint64(b[0]))
		le.PutUint64(buf[headerLen+16*i+8:], uint64(b[1]))
	}
	return buf
}

// decode reads a segment; false for a datagram that is not one (too short,
// an unknown type, a corrupted count).
func decode(b []byte) (segment, bool) {
	if len(b) < headerLen {
		return segment{}, false
	}
	le := binary.LittleEndian
	s := segment{typ: b[0], flags: b[1], conn: le.Uint32(b[4:]), seq: int64(le.Uint64(b[8:])), ts: int64(le.Uint64(b[16:])),
		length: int(le.Uint32(b[28:]))}
	if s.typ < typeSYN || s.typ > typeAck || s.seq < 0 {
		return segment{}, false
	}
	n := int(b[24])
	if n > maxSACK || len(b) < headerLen+16*n {
		return segment{}, false
	}
	for i := range n {
		blk := [2]int64{int64(le.Uint64(b[headerLen+16*i:])), int64(le.Uint64(b[headerLen+16*i+8:]))}
		if blk[0] < 0 || blk[1] <= blk[0] {
			return segment{}, false
		}
		s.blocks = append(s.blocks, blk)
	}
	if s.typ == typeData && (s.length <= 0 || s.length > MSS) {
		return segment{}, false
	}
	return s, true
}

// ackSize is the size of an acknowledgement with n SACK blocks as TCP
// would send it: the header with timestamps, and the SACK option (two
// bytes of kind and length, 8 per block, padded by two NOPs).
func ackSize(n int) int {
	if n == 0 {
		return HeaderBytes
	}
	return HeaderBytes + 4 + 8*n
}

// SenderStats counts what a server's senders did.
type SenderStats struct {
	// Bytes counts the payload sent, each byte once (retransmissions
	// left out).
	Bytes int64
	// Segments counts the data segments sent, retransmissions included.
	Segments int64
	// Retransmits counts the segments sent again.
	Retransmits int64
	// Recoveries counts the fast recoveries (a loss found by SACK, the
	// window cut once), Timeouts the retransmission timeouts.
	Recoveries, Timeouts int64
	// Marked counts the segments the client reported CE-marked, ECNCuts
	// the window cuts they caused (at most one per window).
	Marked, ECNCuts int64
}
