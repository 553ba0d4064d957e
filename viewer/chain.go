package viewer

import (
	"fmt"
	"maps"
	"slices"
)

// Policy is what the viewer does with a frame that reaches the decoder
// after a newer one: frames travel on separate streams, so a frame held
// back by a loss or a spike arrives after the ones sent behind it. A P
// frame is coded against the frame before it, so whatever the viewer does
// costs something: a picture decoded without its reference (damaged), a
// wait, or a keyframe.
type Policy string

// The viewer's policies. The zero Policy is PolicyDrop.
const (
	// PolicyDrop drops a late frame (N8's fix: the picture never steps
	// back in time) and decodes the frames after it onto the picture it
	// has, damaged until a keyframe repairs them; the decoder asks for the
	// keyframe when it decodes a frame whose reference it never had, as a
	// real H.264 decoder does. A keyframe that arrives late is dropped
	// like any other frame.
	PolicyDrop Policy = "drop"
	// PolicyWait decodes frames in order: a frame waits for the one before
	// it, so the picture is never damaged and a held frame holds up the
	// ones behind it. Only a frame known never to come (its stream broke)
	// makes it ask for a keyframe; it then waits for the keyframe.
	PolicyWait Policy = "wait"
	// PolicyKeyframe asks for a keyframe as soon as a frame arrives whose
	// reference has not, and keeps the last whole picture on the screen
	// until the keyframe comes: never a damaged picture, never a wait for
	// the held frame, which the keyframe supersedes with every frame
	// between. Frames coded after the keyframe that arrive before it wait
	// for it.
	PolicyKeyframe Policy = "keyframe"
	// PolicyRefresh drops a late frame and shows the damaged pictures
	// after it, as PolicyDrop does, but asks the encoder to repair them
	// with a rolling intra refresh (a share of the picture intra-coded in
	// each of the next frames) instead of one large keyframe. The picture
	// is whole again when the refresh's last frame is decoded with no
	// frame of the refresh missing.
	PolicyRefresh Policy = "refresh"
)

// Policies lists the policies, the default first.
var Policies = []Policy{PolicyDrop, PolicyWait, PolicyKeyframe, PolicyRefresh}

// validate refuses a policy the viewer does not know.
func (p Policy) validate() error {
	if p == "" || slices.Contains(Policies, p) {
		return nil
	}
	return fmt.Errorf("unknown policy %q (want one of %v)", string(p), Policies)
}

// ReasonSuperseded: the frame was waiting for its reference when a
// keyframe made it useless (PolicyWait and PolicyKeyframe).
const ReasonSuperseded = "superseded"

// ask is a repair the chain wants from the agent.
type ask int

const (
	askNone ask = iota
	askKeyframe
	askRefresh
)

// step is what the chain decided on one arrival: the frames to decode
// now, in order, each with the state of its picture, the frames to drop
// and why, and a repair to ask for.
type step struct {
	decode []decodeStep
	drops  []dropStep
	ask    ask
}

// decodeStep is a frame to decode and the state of the picture it gives.
type decodeStep struct {
	f *frame
	// damaged: the frame is decoded onto a picture whose reference chain
	// is broken (a frame it depends on was never decoded).
	damaged bool
	// age counts the damaged frames decoded since the chain broke, this
	// one included: 1 for the first.
	age int
}

type dropStep struct {
	seq    uint64
	reason string
}

// chain follows the decoder's reference chain and applies the viewer's
// policy to each frame that arrives. It has no clock and no goroutine:
// the decode loop feeds it frames in arrival order and does what it
// says, so the policies can be tested frame by frame.
//
// Every P frame refers to the frame sent just before it (sequence number
// minus one): the agent numbers only the frames it sends, and the encoder
// codes each against the last it encoded. A keyframe refers to nothing.
type chain struct {
	policy Policy
	// inOrder: decode every frame in arrival order, late or not (N8's
	// documented old viewer).
	inOrder bool

	newest  uint64 // the last frame decoded (0: none yet)
	damaged bool   // the decoder's picture is on a broken chain
	age     int    // damaged frames decoded since it broke

	// refreshFrom is the first frame of a rolling refresh being decoded
	// onto a damaged picture (0: none under way).
	refreshFrom uint64

	// held are frames waiting for their reference (PolicyWait,
	// PolicyKeyframe), by sequence number.
	held map[uint64]*frame
	// lost are frames known never to come: their streams broke.
	lost map[uint64]bool
	// awaitKey: the chain waits for a keyframe (PolicyKeyframe after a
	// gap; PolicyWait after a loss).
	awaitKey bool
}

func newChain(p Policy, inOrder bool) *chain {
	if p == "" {
		p = PolicyDrop
	}
	return &chain{policy: p, inOrder: inOrder, held: map[uint64]*frame{}, lost: map[uint64]bool{}}
}

// arrived applies the policy to a frame that arrived whole.
func (c *chain) arrived(f *frame) step {
	var s step
	switch c.policy {
	case PolicyWait, PolicyKeyframe:
		c.holdOrDrop(f, &s)
		c.release(&s)
	default:
		if !c.inOrder && f.h.Seq <= c.newest {
			s.drops = append(s.drops, dropStep{f.h.Seq, ReasonLate})
			return s
		}
		c.decode(f, &s)
	}
	return s
}

// broke notes a frame whose stream broke after its header (seq) or
// before it (seq 0: which frame is unknown). The frames after it cannot
// be decoded whole without a keyframe.
func (c *chain) broke(seq uint64) step {
	var s step
	if seq != 0 && seq <= c.newest {
		return s
	}
	if seq != 0 {
		c.lost[seq] = true
	}
	switch c.policy {
	case PolicyWait, PolicyKeyframe:
		c.awaitKey = true
		s.ask = askKeyframe
		c.release(&s)
	case PolicyRefresh:
		s.ask = askRefresh
	default:
		s.ask = askKeyframe
	}
	return s
}

// decode decodes f after the last frame decoded and follows the chain:
// a keyframe repairs it, a P frame whose reference is not the last frame
// decoded breaks it, and a rolling refresh decoded whole repairs it.
func (c *chain) decode(f *frame, s *step) {
	seq := f.h.Seq
	follows := seq == c.newest+1 && c.newest != 0
	switch {
	case f.h.Keyframe():
		c.damaged, c.age, c.refreshFrom = false, 0, 0
	case !follows:
		if !c.damaged {
			c.damaged, c.age = true, 0
		}
		c.refreshFrom = 0
	}
	if c.damaged && c.policy == PolicyRefresh {
		switch {
		case f.h.RefreshBegin():
			c.refreshFrom = seq
		case c.refreshFrom != 0 && !follows:
			c.refreshFrom = 0
		}
		if c.refreshFrom != 0 && f.h.RefreshEnd() {
			c.damaged, c.age, c.refreshFrom = false, 0, 0
		}
	}
	if c.damaged {
		c.age++
		// A decoder that decodes a frame without its reference asks for
		// a repair, on every such frame until one comes (the viewer's
		// request is rate-limited and cleared by a keyframe).
		if c.policy == PolicyRefresh {
			if c.refreshFrom == 0 {
				s.ask = askRefresh
			}
		} else {
			s.ask = askKeyframe
		}
	}
	c.newest = max(c.newest, seq)
	s.decode = append(s.decode, decodeStep{f: f, damaged: c.damaged, age: c.age})
}

// holdOrDrop takes an arrival under PolicyWait or PolicyKeyframe: a frame
// older than the picture is late; any other waits in held until release
// finds its turn.
func (c *chain) holdOrDrop(f *frame, s *step) {
	seq := f.h.Seq
	if seq <= c.newest {
		s.drops = append(s.drops, dropStep{seq, ReasonLate})
		return
	}
	c.held[seq] = f
	if c.policy == PolicyKeyframe && !c.awaitKey && !f.h.Keyframe() && c.newest != 0 && seq != c.newest+1 {
		// Its reference has not arrived: ask at once, and show nothing
		// until the keyframe.
		c.awaitKey = true
		s.ask = askKeyframe
	}
}

// release decodes the held frames whose turn has come: the next in
// sequence while the chain is whole, or the newest keyframe held, which
// makes every older frame useless.
func (c *chain) release(s *step) {
	for {
		if key := c.newestHeldKeyframe(); key != 0 && (c.awaitKey || c.held[c.newest+1] == nil) {
			for _, seq := range slices.Sorted(maps.Keys(c.held)) {
				if seq < key {
					delete(c.held, seq)
					s.drops = append(s.drops, dropStep{seq, ReasonSuperseded})
				}
			}
			c.awaitKey = false
			f := c.held[key]
			delete(c.held, key)
			c.decode(f, s)
			continue
		}
		next := c.newest + 1
		f := c.held[next]
		if c.awaitKey || c.lost[next] || f == nil {
			if c.lost[next] && !c.awaitKey {
				c.awaitKey = true
				s.ask = askKeyframe
			}
			return
		}
		delete(c.held, next)
		c.decode(f, s)
	}
}

// newestHeldKeyframe is the newest keyframe waiting in held, 0 if none.
func (c *chain) newestHeldKeyframe() uint64 {
	var key uint64
	for seq, f := range c.held {
		if f.h.Keyframe() && seq > key {
			key = seq
		}
	}
	return key
}
