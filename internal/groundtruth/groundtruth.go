// Package groundtruth records what really happened in a session: for every
// frame, the true instants of capture, encoding, sending, arrival, decoding
// and display (true time: the time package, virtual in a synctest bubble),
// every skip and drop with its reason, and beside them the viewer's own
// estimates. The agent and viewer write into one Recorder as they work; the
// lab reads it to measure the measurement (DESIGN decision 4).
package groundtruth

import (
	"slices"
	"sync"
	"time"
)

// Frame is one frame's history. Zero instants mean "did not happen".
type Frame struct {
	Seq      uint64
	Pass     int // refinement pass: 0 for a new image (N15)
	Keyframe bool
	Bytes    int
	Quality  float64 // the encoder's figure, 0-1
	// PSNR is the quality shown, with a real decoder: the viewer's
	// picture after this frame against the one captured for it, in dB;
	// 0 when nothing judged it.
	PSNR float64
	// SSIM is the same picture's structural similarity (luma, 0 to 1),
	// beside PSNR; meaningful only where PSNR is set.
	SSIM float64
	// Damaged: the viewer decoded the frame onto a broken reference chain
	// (a frame it depends on was never decoded), so the picture it shows
	// is not the one encoded. DamageAge counts the damaged frames decoded
	// since the chain broke, this one included.
	Damaged   bool
	DamageAge int
	// ContentAt is when the captured content appeared on the screen.
	ContentAt time.Time
	// Version is the version of the screen the frame shows (screen.Image):
	// the image captured, or for a refinement pass the image refined.
	Version uint64
	// Captured is the instant the image was taken (the capture time the
	// frame carries, in true time).
	Captured time.Time
	// ConvertStart and ConvertEnd bracket colour conversion (N4).
	ConvertStart, ConvertEnd time.Time
	// EncodeStart and EncodeEnd bracket encoding.
	EncodeStart, EncodeEnd time.Time
	// Sent is when the agent handed the frame to QUIC.
	Sent time.Time
	// Arrived is when the viewer had the whole frame.
	Arrived time.Time
	// DecodeStart and Decoded bracket decoding.
	DecodeStart, Decoded time.Time
	// Displayed is when the frame reached the screen.
	Displayed time.Time
	// Dropped is why the viewer never displayed it (empty if displayed or
	// still in flight).
	Dropped string
	// Estimated is the viewer's own capture-to-display latency for the
	// frame, computed with its clock-offset estimate (N1);
	// EstimatedNetwork its network part (end of encoding to arrival, N12).
	Estimated, EstimatedNetwork time.Duration
}

// Latency is the true capture-to-display latency (0 if not displayed).
func (f Frame) Latency() time.Duration {
	if f.Displayed.IsZero() {
		return 0
	}
	return f.Displayed.Sub(f.Captured)
}

// Network is the true network part: end of encoding to arrival.
func (f Frame) Network() time.Duration {
	if f.Arrived.IsZero() {
		return 0
	}
	return f.Arrived.Sub(f.EncodeEnd)
}

// Event is something that happened to no frame in particular, or to a frame
// that never existed: a skipped capture, say.
type Event struct {
	At     time.Time
	Kind   string // "skip", "drop", "freeze", ...
	Reason string
	Seq    uint64 // the frame concerned, if any
}

// Recorder collects a session's ground truth. It is safe for concurrent use.
// A nil *Recorder records nothing, so components run without one.
type Recorder struct {
	mu       sync.Mutex
	frames   map[uint64]*Frame
	events   []Event
	observer Observer
}

// Observer is told of every change as it is recorded, so that live figures
// (metrics) follow the session without polling the recorder. It is called
// with the recorder's lock held, which keeps the calls in the order the
// changes were made; it must therefore be quick and must not call the
// recorder back.
type Observer interface {
	// FrameChanged gets a frame's record before and after an update.
	FrameChanged(before, after Frame)
	// EventRecorded gets each event.
	EventRecorded(e Event)
}

// New returns an empty recorder.
func New() *Recorder { return &Recorder{frames: map[uint64]*Frame{}} }

// NewObserved returns an empty recorder that tells o of every change; a nil
// o observes nothing, like New.
func NewObserved(o Observer) *Recorder {
	r := New()
	r.observer = o
	return r
}

// Update applies fn to frame seq's record, creating it if needed.
func (r *Recorder) Update(seq uint64, fn func(*Frame)) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.frames[seq]
	if f == nil {
		f = &Frame{Seq: seq}
		r.frames[seq] = f
	}
	if r.observer == nil {
		fn(f)
		return
	}
	before := *f
	fn(f)
	r.observer.FrameChanged(before, *f)
}

// Event records an event.
func (r *Recorder) Event(e Event) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	if r.observer != nil {
		r.observer.EventRecorded(e)
	}
}

// Frames returns a copy of every frame's record, by sequence number.
func (r *Recorder) Frames() []Frame {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Frame, 0, len(r.frames))
	for _, f := range r.frames {
		out = append(out, *f)
	}
	slices.SortFunc(out, func(a, b Frame) int {
		switch {
		case a.Seq < b.Seq:
			return -1
		case a.Seq > b.Seq:
			return 1
		}
		return 0
	})
	return out
}

// Events returns a copy of the events, in the order recorded.
func (r *Recorder) Events() []Event {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// Count returns how many events of kind with reason were recorded (any
// reason if reason is empty).
func (r *Recorder) Count(kind, reason string) int {
	n := 0
	for _, e := range r.Events() {
		if e.Kind == kind && (reason == "" || e.Reason == reason) {
			n++
		}
	}
	return n
}
