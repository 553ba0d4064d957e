package wire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

// Type identifies a control message.
type Type uint8

// The control messages.
const (
	TypeClockProbe      Type = 1 // viewer -> agent: NTP-style request
	TypeClockReply      Type = 2 // agent -> viewer: with the agent's receive and send instants
	TypeReport          Type = 3 // viewer -> agent: latency figures of one period (N1)
	TypeAck             Type = 4 // viewer -> agent: a frame fully received (N8's send cap)
	TypeKeyframeRequest Type = 5 // viewer -> agent: the decoder needs an intra frame
	TypeRefreshRequest  Type = 6 // viewer -> agent: repair the picture with a rolling intra refresh
)

// Message is a control message.
type Message interface {
	Type() Type
	appendBody([]byte) []byte
	parseBody([]byte) error
}

// ClockProbe asks the agent for its clock. T1 is the viewer's clock at send.
type ClockProbe struct {
	ID uint32
	T1 time.Time
}

// ClockReply answers a probe: T2 when the agent received it, T3 when it
// replied, both on the agent's clock. With T4, the viewer's clock at arrival,
// the offset is ((T2-T1)+(T3-T4))/2 and the round trip (T4-T1)-(T3-T2).
type ClockReply struct {
	ID         uint32
	T1, T2, T3 time.Time
}

// Report carries one report period's figures (every 250 ms, N1): the median
// and minimum capture-to-display latency, and the same for the network part
// (end of encoding to arrival, N12), as the viewer measured them.
type Report struct {
	// End is the end of the period on the viewer's clock.
	End time.Time
	// Frames is how many frames were displayed in the period.
	Frames uint32
	// Median and Min latency from capture to display.
	Median, Min time.Duration
	// NetworkMedian and NetworkMin: end of encoding to arrival.
	NetworkMedian, NetworkMin time.Duration
}

// Ack tells the agent a frame arrived whole: its bytes no longer count as
// sent but unacknowledged (N8), and Arrived (the viewer's clock) lets a
// delay-based controller compare arrival spacing with send spacing.
type Ack struct {
	Seq     uint64
	Bytes   uint32
	Arrived time.Time
}

// KeyframeRequest asks for an intra frame (a frame was lost or corrupt).
type KeyframeRequest struct{}

// RefreshRequest asks for a rolling intra refresh: the picture repaired a
// share at a time over the next frames, instead of in one large keyframe.
type RefreshRequest struct{}

// Type implements Message.
func (ClockProbe) Type() Type { return TypeClockProbe }

// Type implements Message.
func (ClockReply) Type() Type { return TypeClockReply }

// Type implements Message.
func (Report) Type() Type { return TypeReport }

// Type implements Message.
func (Ack) Type() Type { return TypeAck }

// Type implements Message.
func (KeyframeRequest) Type() Type { return TypeKeyframeRequest }

// Type implements Message.
func (RefreshRequest) Type() Type { return TypeRefreshRequest }

func appendTime(b []byte, t time.Time) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(unixNano(t)))
}

func appendDur(b []byte, d time.Duration) []byte { return binary.BigEndian.AppendUint64(b, uint64(d)) }

func (m ClockProbe) appendBody(b []byte) []byte {
	return appendTime(binary.BigEndian.AppendUint32(b, m.ID), m.T1)
}

func (m *ClockProbe) parseBody(b []byte) error {
	if err := wantLen(b, 12); err != nil {
		return err
	}
	m.ID = binary.BigEndian.Uint32(b)
	m.T1 = fromUnixNano(int64(binary.BigEndian.Uint64(b[4:])))
	return nil
}

func (m ClockReply) appendBody(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, m.ID)
	return appendTime(appendTime(appendTime(b, m.T1), m.T2), m.T3)
}

func (m *ClockReply) parseBody(b []byte) error {
	if err := wantLen(b, 28); err != nil {
		return err
	}
	m.ID = binary.BigEndian.Uint32(b)
	m.T1 = fromUnixNano(int64(binary.BigEndian.Uint64(b[4:])))
	m.T2 = fromUnixNano(int64(binary.BigEndian.Uint64(b[12:])))
	m.T3 = fromUnixNano(int64(binary.BigEndian.Uint64(b[20:])))
	return nil
}

func (m Report) appendBody(b []byte) []byte {
	b = appendTime(b, m.End)
	b = binary.BigEndian.AppendUint32(b, m.Frames)
	return appendDur(appendDur(appendDur(appendDur(b, m.Median), m.Min), m.NetworkMedian), m.NetworkMin)
}

func (m *Report) parseBody(b []byte) error {
	if err := wantLen(b, 44); err != nil {
		return err
	}
	m.End = fromUnixNano(int64(binary.BigEndian.Uint64(b)))
	m.Frames = binary.BigEndian.Uint32(b[8:])
	m.Median = time.Duration(binary.BigEndian.Uint64(b[12:]))
	m.Min = time.Duration(binary.BigEndian.Uint64(b[20:]))
	m.NetworkMedian = time.Duration(binary.BigEndian.Uint64(b[28:]))
	m.NetworkMin = time.Duration(binary.BigEndian.Uint64(b[36:]))
	return nil
}

func (m Ack) appendBody(b []byte) []byte {
	return appendTime(binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64(b, m.Seq), m.Bytes), m.Arrived)
}

func (m *Ack) parseBody(b []byte) error {
	if err := wantLen(b, 20); err != nil {
		return err
	}
	m.Seq = binary.BigEndian.Uint64(b)
	m.Bytes = binary.BigEndian.Uint32(b[8:])
	m.Arrived = fromUnixNano(int64(binary.BigEndian.Uint64(b[12:])))
	return nil
}

func (KeyframeRequest) appendBody(b []byte) []byte { return b }

func (*KeyframeRequest) parseBody(b []byte) error { return wantLen(b, 0) }

func (RefreshRequest) appendBody(b []byte) []byte { return b }
func (*RefreshRequest) parseBody(b []byte) error  { return wantLen(b, 0) }

// ErrBadMessage wraps every reason a control message is refused.
var ErrBadMessage = errors.New("wire: bad control message")

func wantLen(b []byte, n int) error {
	if len(b) != n {
		return fmt.Errorf("%w: body of %d bytes, want %d", ErrBadMessage, len(b), n)
	}
	return nil
}

// maxBody bounds a control message's body; the largest is 44 bytes.
const maxBody = 256

// AppendMessage appends m framed as type, body length (one byte), body.
func AppendMessage(b []byte, m Message) []byte {
	body := m.appendBody(nil)
	b = append(b, byte(m.Type()), byte(len(body)))
	return append(b, body...)
}

// WriteMessage writes one framed message.
func WriteMessage(w io.Writer, m Message) error {
	_, err := w.Write(AppendMessage(nil, m))
	return err
}

// ReadMessage reads one framed message. io.EOF means the stream ended
// cleanly between messages; a message cut short is io.ErrUnexpectedEOF.
func ReadMessage(r *bufio.Reader) (Message, error) {
	var head [2]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w: truncated header: %w", ErrBadMessage, err)
		}
		return nil, err
	}
	body := make([]byte, head[1])
	if _, err := io.ReadFull(r, body); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("%w: truncated body: %w", ErrBadMessage, err)
	}
	return ParseMessage(Type(head[0]), body)
}

// ParseMessage decodes the body of a message of type t.
func ParseMessage(t Type, body []byte) (Message, error) {
	var m Message
	switch t {
	case TypeClockProbe:
		m = &ClockProbe{}
	case TypeClockReply:
		m = &ClockReply{}
	case TypeReport:
		m = &Report{}
	case TypeAck:
		m = &Ack{}
	case TypeKeyframeRequest:
		m = &KeyframeRequest{}
	case TypeRefreshRequest:
		m = &RefreshRequest{}
	default:
		return nil, fmt.Errorf("%w: unknown type %d", ErrBadMessage, t)
	}
	if len(body) > maxBody {
		return nil, fmt.Errorf("%w: body of %d bytes", ErrBadMessage, len(body))
	}
	if err := m.parseBody(body); err != nil {
		return nil, err
	}
	return m, nil
}
