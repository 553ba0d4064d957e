// Package pcap captures what crosses netem links as a pcapng file that
// Wireshark and tshark open. Each link tapped gets two interfaces,
// "<link>-in" (every packet offered to the link, with its fate in the
// packet's comment) and "<link>-out" (every packet the link delivered), so
// a capture shows both sides of an impairment at once. Most links carry
// bare UDP payloads; the capture wraps each in a synthetic IPv4 (or IPv6)
// and UDP header built from the packet's addresses, so that Wireshark
// dissects UDP and, with the session's TLS key log, decrypts QUIC. The
// kernel mode's links carry whole IP packets, which TapIP captures as they
// are.
//
// A capture of several flows (the lab's competing traffic) names each
// packet's flow in a comment of its own, "flow download", beside its
// fate (NameFlows), and lists the flows in the section's comment
// (Describe). A comment rather than an interface per flow: an interface is
// a point of capture, and a link's "-in" interface then shows every flow
// in the order the bottleneck took them, with the link's own statistics;
// Wireshark filters a flow with frame.comment == "flow download" and shows
// the comments as a column.
//
// gopacket's pcapgo.NgWriter writes the section, the interfaces and the
// packets without a comment. It writes no per-packet options and no
// statistics comment, so the packets with a comment (Enhanced Packet
// Blocks with opt_comment, draft-ietf-opsawg-pcapng section 4.3) and the
// final Interface Statistics Blocks are encoded by this package, into the
// same buffered stream after flushing NgWriter's own buffer.
package pcap

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/nuvirahub/latencylab/netem"
)

// DroppedPrefix begins the comment of every packet a link dropped, followed
// by the netem.DropReason: "dropped: loss". DeliveredPrefix begins the
// comment of every packet it delivers, followed by the time it spends in
// the link: "delivered after 25ms".
const (
	DroppedPrefix   = "dropped: "
	DeliveredPrefix = "delivered after "
)

// FlowPrefix begins the comment that names a packet's flow, followed by
// the flow's name: "flow download" (see NameFlows).
const FlowPrefix = "flow "

// Writer writes one pcapng capture of any number of links. It is safe for
// concurrent use: every tapped link writes into it from its own flow.
// Nothing reaches the underlying writer for certain before Flush or Close.
type Writer struct {
	mu      sync.Mutex
	out     *bufio.Writer // shared by ng and the blocks written here
	ng      *pcapgo.NgWriter
	section string                     // the section's comment (Describe)
	flowOf  func(*netem.Packet) string // names a packet's flow (NameFlows)
	ifaces  int
	taps    map[string]*Tap
	scratch gopacket.SerializeBuffer
	block   []byte
	err     error // the first write error; later writes are skipped
	closed  bool
}

// NewWriter starts a capture on w. The pcapng section header is written
// with the first tap, because NgWriter writes an interface with it.
func NewWriter(w io.Writer) *Writer {
	return &Writer{
		out:     bufio.NewWriterSize(w, 64<<10),
		taps:    map[string]*Tap{},
		scratch: gopacket.NewSerializeBuffer(),
	}
}

// Describe sets the comment of the capture's section (Wireshark's Capture
// File Properties): what the capture holds, such as its flows and their
// ports. Call it before the first Tap; later it changes nothing.
func (w *Writer) Describe(comment string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.section = comment
}

// NameFlows makes every packet name its flow: name returns it for a packet
// ("" for none), and the packet carries the comment "flow NAME" beside its
// fate. Call it before the links carry packets.
func (w *Writer) NameFlows(name func(p *netem.Packet) string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flowOf = name
}

// Tap adds the interfaces "<link>-in" and "<link>-out" to the capture and
// returns the tap to set as the link's netem.LinkConfig.Tap. Each link needs
// its own name. The link's packets are UDP payloads, captured inside
// synthetic IP and UDP headers.
func (w *Writer) Tap(link string) (*Tap, error) { return w.tap(link, false) }

// TapIP is Tap for a link whose packets are whole IP packets (netem/kernel's
// links): they are captured byte for byte, with no header added.
func (w *Writer) TapIP(link string) (*Tap, error) { return w.tap(link, true) }

func (w *Writer) tap(link string, raw bool) (*Tap, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, errors.New("pcap: writer closed")
	}
	if _, dup := w.taps[link]; dup {
		return nil, fmt.Errorf("pcap: link %q tapped twice", link)
	}
	in := pcapgo.NgInterface{
		Name:        link + "-in",
		Description: "packets offered to netem link " + link + ", each with its fate",
		LinkType:    layers.LinkTypeRaw,
	}
	out := pcapgo.NgInterface{
		Name:        link + "-out",
		Description: "packets delivered by netem link " + link,
		LinkType:    layers.LinkTypeRaw,
	}
	t := &Tap{w: w, name: link, raw: raw}
	if w.ng == nil {
		opts := pcapgo.DefaultNgWriterOptions
		opts.SectionInfo.Application = "latencylab netem/pcap"
		opts.SectionInfo.Comment = w.section
		ng, err := pcapgo.NewNgWriterInterface(w.out, in, opts)
		if err != nil {
			return nil, fmt.Errorf("pcap: %w", err)
		}
		w.ng = ng
		t.in = 0
	} else {
		id, err := w.ng.AddInterface(in)
		if err != nil {
			return nil, fmt.Errorf("pcap: %w", err)
		}
		t.in = id
	}
	id, err := w.ng.AddInterface(out)
	if err != nil {
		return nil, fmt.Errorf("pcap: %w", err)
	}
	t.out = id
	w.taps[link] = t
	return t, nil
}

// WriteStats records a link's final counters as the pcapng interface
// statistics of its two interfaces (Wireshark shows them under Capture File
// Properties): on "<link>-in" the packets offered and dropped, on
// "<link>-out" the packets delivered; each comment lists the drops by
// reason. Call it once the link is closed, so the counters include the
// packets lost at Close.
func (w *Writer) WriteStats(link string, s netem.Stats) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	t := w.taps[link]
	if t == nil {
		return fmt.Errorf("pcap: link %q not tapped", link)
	}
	if w.err != nil {
		return w.err
	}
	// NgWriter.WriteInterfaceStats leaves out the comment, which carries
	// the drops by reason: these blocks are encoded here too.
	if err := w.ng.Flush(); err != nil {
		w.err = err
		return err
	}
	now := time.Now()
	comment := dropsComment(s.Dropped)
	dropped := s.DroppedTotal().Packets
	w.block = appendISB(w.block[:0], t.in, now, comment, s.Offered.Packets, &dropped)
	w.block = appendISB(w.block, t.out, now, comment, s.Delivered.Packets, nil)
	_, w.err = w.out.Write(w.block)
	return w.err
}

// dropsComment lists drops by reason in a stable order: "loss=3 queue=1".
func dropsComment(d map[netem.DropReason]netem.Counter) string {
	var b strings.Builder
	for _, r := range slices.Sorted(maps.Keys(d)) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%d", r, d[r].Packets)
	}
	if b.Len() == 0 {
		return "no drops"
	}
	return "drops: " + b.String()
}

// Flush writes out what is buffered and returns the first error any write
// met.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flush()
}

func (w *Writer) flush() error {
	if w.err != nil {
		return w.err
	}
	if w.ng != nil {
		if err := w.ng.Flush(); err != nil {
			w.err = err
			return err
		}
	}
	if err := w.out.Flush(); err != nil {
		w.err = err
	}
	return w.err
}

// Close flushes the capture; packets tapped afterwards are ignored. It does
// not close the underlying writer.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	return w.flush()
}

// Tap is one link's tap in a capture: a netem.Tap.
type Tap struct {
	w       *Writer
	name    string
	in, out int
	raw     bool // the packets are whole IP packets (TapIP)
}

var _ netem.Tap = (*Tap)(nil)

// Entered implements netem.Tap: the packet goes on "<link>-in" at the
// instant it was sent, with its fate as the comment.
func (t *Tap) Entered(p *netem.Packet, f netem.Fate) {
	var comment string
	if f.Drop != "" {
		comment = DroppedPrefix + string(f.Drop)
	} else {
		comment = DeliveredPrefix + f.At.Sub(p.Sent).String()
	}
	t.w.write(t.in, p.Sent, p, comment, t.raw)
}

// Left implements netem.Tap: the packet goes on "<link>-out" now. Copies
// made by a duplicate impairment and corrupted payloads say so in a
// comment.
func (t *Tap) Left(p *netem.Packet) {
	var comment string
	switch {
	case p.Duplicate && p.Corrupted:
		comment = "duplicate, corrupted"
	case p.Duplicate:
		comment = "duplicate"
	case p.Corrupted:
		comment = "corrupted"
	}
	t.w.write(t.out, time.Now(), p, comment, t.raw)
}

// write adds one packet to the capture, as it is when raw, else inside
// synthetic headers. Errors are kept for Flush: a tap cannot fail the link
// it watches.
func (w *Writer) write(iface int, at time.Time, p *netem.Packet, comment string, raw bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.err != nil {
		return
	}
	frame := p.Data
	if !raw {
		var err error
		if frame, err = w.frame(p); err != nil {
			w.err = err
			return
		}
	}
	comments := make([]string, 0, 2)
	if comment != "" {
		comments = append(comments, comment)
	}
	if w.flowOf != nil {
		if name := w.flowOf(p); name != "" {
			comments = append(comments, FlowPrefix+name)
		}
	}
	if len(comments) == 0 {
		ci := gopacket.CaptureInfo{Timestamp: at, CaptureLength: len(frame), Length: len(frame), InterfaceIndex: iface}
		w.err = w.ng.WritePacket(ci, frame)
		return
	}
	// NgWriter buffers on its own: its blocks must reach w.out before
	// this one does.
	if err := w.ng.Flush(); err != nil {
		w.err = err
		return
	}
	w.block = appendCommentedEPB(w.block[:0], iface, at, frame, comments)
	_, w.err = w.out.Write(w.block)
}

// frame wraps p's payload in IP and UDP headers made from its addresses.
// The result is valid until the next call.
func (w *Writer) frame(p *netem.Packet) ([]byte, error) {
	from, to := addrPort(p.From), addrPort(p.To)
	udp := &layers.UDP{SrcPort: layers.UDPPort(from.Port()), DstPort: layers.UDPPort(to.Port())}
	var ip gopacket.SerializableLayer
	src, dst := from.Addr().Unmap(), to.Addr().Unmap()
	if src.Is4() && dst.Is4() {
		v4 := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: src.AsSlice(), DstIP: dst.AsSlice()}
		_ = udp.SetNetworkLayerForChecksum(v4)
		ip = v4
	} else {
		s16, d16 := from.Addr().As16(), to.Addr().As16()
		v6 := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolUDP, SrcIP: s16[:], DstIP: d16[:]}
		_ = udp.SetNetworkLayerForChecksum(v6)
		ip = v6
	}
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	if err := gopacket.SerializeLayers(w.scratch, opts, ip, udp, gopacket.Payload(p.Data)); err != nil {
		return nil, fmt.Errorf("pcap: packet %d: %w", p.Seq, err)
	}
	return w.scratch.Bytes(), nil
}

// addrPort reads a packet's address; anything but a UDP address (there is
// none on a netem network) becomes the zero IPv4 address, port 0, so the
// packet is still recorded.
func addrPort(a net.Addr) netip.AddrPort {
	if u, ok := a.(*net.UDPAddr); ok {
		return u.AddrPort()
	}
	if a != nil {
		if ap, err := netip.ParseAddrPort(a.String()); err == nil {
			return ap
		}
	}
	return netip.AddrPortFrom(netip.IPv4Unspecified(), 0)
}

// pcapng block and option codes (draft-ietf-opsawg-pcapng).
const (
	blockInterfaceStats = 5
	blockEnhancedPacket = 6
	optEndOfOpt         = 0
	optComment          = 1
	optISBIfRecv        = 4
	optISBIfDrop        = 5
)

// pad4 is how many bytes pad n to a multiple of four.
func pad4(n int) int { return (4 - n%4) % 4 }

// appendOption encodes one option with its padding.
func appendOption(b []byte, code uint16, value []byte) []byte {
	le := binary.LittleEndian
	b = le.AppendUint16(b, code)
	b = le.AppendUint16(b, uint16(len(value)))
	b = append(b, value...)
	return append(b, make([]byte, pad4(len(value)))...)
}

// appendISB encodes an Interface Statistics Block: the packets the
// interface saw, those dropped when known (nil: not written), and a
// comment.
func appendISB(b []byte, iface int, at time.Time, comment string, received uint64, dropped *uint64) []byte {
	le := binary.LittleEndian
	start := len(b)
	ts := uint64(at.UnixNano())
	b = le.AppendUint32(b, blockInterfaceStats)
	b = le.AppendUint32(b, 0) // total length, set below
	b = le.AppendUint32(b, uint32(iface))
	b = le.AppendUint32(b, uint32(ts>>32))
	b = le.AppendUint32(b, uint32(ts))
	b = appendOption(b, optComment, []byte(comment))
	b = appendOption(b, optISBIfRecv, le.AppendUint64(nil, received))
	if dropped != nil {
		b = appendOption(b, optISBIfDrop, le.AppendUint64(nil, *dropped))
	}
	b = appendOption(b, optEndOfOpt, nil)
	total := len(b) - start + 4
	le.PutUint32(b[start+4:], uint32(total))
	return le.AppendUint32(b, uint32(total))
}

// appendCommentedEPB encodes an Enhanced Packet Block with an opt_comment
// per comment (the option may repeat), little-endian like the rest of
// NgWriter's section, with nanosecond timestamps to match the interfaces'
// if_tsresol of 9.
func appendCommentedEPB(b []byte, iface int, at time.Time, frame []byte, comments []string) []byte {
	optLen := 4 // opt_endofopt
	for _, c := range comments {
		optLen += 4 + len(c) + pad4(len(c))
	}
	total := 28 + len(frame) + pad4(len(frame)) + optLen + 4
	le := binary.LittleEndian
	ts := uint64(at.UnixNano())
	b = le.AppendUint32(b, blockEnhancedPacket)
	b = le.AppendUint32(b, uint32(total))
	b = le.AppendUint32(b, uint32(iface))
	b = le.AppendUint32(b, uint32(ts>>32))
	b = le.AppendUint32(b, uint32(ts))
	b = le.AppendUint32(b, uint32(len(frame)))
	b = le.AppendUint32(b, uint32(len(frame)))
	b = append(b, frame...)
	b = append(b, make([]byte, pad4(len(frame)))...)
	for _, c := range comments {
		b = appendOption(b, optComment, []byte(c))
	}
	b = appendOption(b, optEndOfOpt, nil)
	return le.AppendUint32(b, uint32(total))
}
