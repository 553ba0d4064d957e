package netem

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"time"
)

// Stage orders impairments inside a link. Whatever order a configuration lists
// them in, a packet meets the gate first, then random loss, then the
// bottleneck (rate or trace, with its queue), then delay. The order is fixed
// because the bottleneck's queue needs packets in the order they were sent,
// and delay after the bottleneck is where propagation and radio stalls live.
type Stage int

// The stages, in the order a packet meets them.
const (
	StageGate       Stage = iota // block, outage
	StageLoss                    // loss, gilbert, duplicate, corrupt
	StageBottleneck              // rate, trace (at most one per link)
	StageDelay                   // delay, jitter, spikes
)

func (s Stage) String() string {
	switch s {
	case StageGate:
		return "gate"
	case StageLoss:
		return "loss"
	case StageBottleneck:
		return "bottleneck"
	case StageDelay:
		return "delay"
	}
	return fmt.Sprintf("stage(%d)", int(s))
}

// Env is what the link hands an impairment with every packet.
type Env struct {
	// Rand is the impairment's own source, seeded from the run's seed, the
	// link's name, the impairment's kind and its place in the link.
	Rand *rand.Rand
	// Epoch is the link's time zero: periodic schedules (spikes, outages,
	// traces, timelines) count from it.
	Epoch time.Time
}

// Verdict is an impairment's decision for one packet.
type Verdict struct {
	// At is the instant the packet leaves this impairment (never before the
	// instant it arrived).
	At time.Time
	// Drop, when not empty, drops the packet; At is then ignored.
	Drop DropReason
	// Duplicates is how many extra copies continue from this impairment on.
	Duplicates int
	// Queued is the time the packet waited in a queue (bottleneck stage),
	// kept in the link's counters.
	Queued time.Duration
	// Marked says the impairment set the packet's ECN field to CE (an
	// active queue signalling congestion to an ECN-capable transport
	// instead of dropping), kept in the link's counters.
	Marked bool
	// Held says a scheduling queue keeps the packet (see Scheduler): its
	// fate is decided when the queue lets it go.
	Held bool
}

// Impairment is one way a link degrades packets. Apply is called once per
// packet, in the order packets were sent, with the instant the packet reaches
// the impairment; inside one stage those instants never decrease.
//
// An impairment's exported fields are its parameters (scenarios decode into
// them); unexported fields are its state for one link. An instance belongs to
// one link.
type Impairment interface {
	// Kind is the name the impairment is registered under.
	Kind() string
	// Stage is where in the link the impairment acts.
	Stage() Stage
	// Apply decides the fate of p, which reaches the impairment at at.
	Apply(p *Packet, at time.Time, env *Env) Verdict
}

// Validator is implemented by impairments whose parameters can be wrong.
// Links refuse an impairment whose Validate fails.
type Validator interface {
	Validate() error
}

// Inheritor is implemented by stateful impairments that carry their state
// across a parameter change (a timeline phase or Link.Set) when the new
// configuration has one of the same kind: a rate cap keeps its queue, a
// Gilbert-Elliott model its state, a trace its position.
type Inheritor interface {
	Inherit(prev Impairment)
}

// Reorderer is implemented by impairments that may let a packet overtake an
// earlier one. A link delivers in sending order unless one of its
// impairments reports Reorders() == true.
type Reorderer interface {
	Reorders() bool
}

// Backlogger is implemented by queueing impairments: what waits at instant
// now (packets and bytes not yet fully sent).
type Backlogger interface {
	Backlog(now time.Time) (packets, bytes int)
}

var (
	registryMu sync.RWMutex
	registry   = map[string]func() Impairment{}
)

// Register makes an impairment available by name. The factory returns a new
// instance holding the default parameters. Registering a name twice panics:
// it is a programming error.
func Register(kind string, factory func() Impairment) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[kind]; dup {
		panic("netem: impairment registered twice: " + kind)
	}
	registry[kind] = factory
}

// New returns a fresh instance of the impairment registered as kind, with its
// default parameters, ready for a decoder to fill in.
func New(kind string) (Impairment, error) {
	registryMu.RLock()
	f, ok := registry[kind]
	registryMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("netem: unknown impairment %q (known: %v)", kind, Kinds())
	}
	return f(), nil
}

// Kinds lists the registered impairment names, sorted.
func Kinds() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	names := make([]string, 0, len(registry))
	for k := range registry {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// validate checks one configuration of a link: every impairment valid, at
// most one bottleneck.
func validate(imps []Impairment) error {
	bottlenecks := 0
	for _, imp := range imps {
		if imp == nil {
			return fmt.Errorf("netem: nil impairment")
		}
		if v, ok := imp.(Validator); ok {
			if err := v.Validate(); err != nil {
				return fmt.Errorf("netem: %s: %w", imp.Kind(), err)
			}
		}
		if imp.Stage() == StageBottleneck {
			bottlenecks++
		}
	}
	if bottlenecks > 1 {
		return fmt.Errorf("netem: a link has at most one bottleneck (rate or trace), got %d", bottlenecks)
	}
	return nil
}

// ordered returns imps sorted by stage, keeping the given order inside a stage.
func ordered(imps []Impairment) []Impairment {
	out := slices.Clone(imps)
	slices.SortStableFunc(out, func(a, b Impairment) int { return int(a.Stage()) - int(b.Stage()) })
	return out
}
