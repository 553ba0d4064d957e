package scenarios

import (
	"cmp"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/nuvirahub/latencylab/netem"
)

// maxRefresh is the screen model's highest display refresh.
const maxRefresh = 1000

// maxDriftPPM bounds a clock's drift: PC quartz clocks drift by tens of
// ppm; a thousand is already a broken clock, and more would make the
// viewer's offset estimate meaningless.
const maxDriftPPM = 1000

// Validate checks a Scenario the way the loader checks a file: required
// fields, names (findings, groups, sources, presets, distributions,
// measurements), ranges, the order of timelines and the fields that cannot
// go together. The loader runs the same checks, so a loaded scenario
// always validates; Validate is for scenarios built or changed in Go.
// Its errors are *Error values with File set from s.File and no line.
func (s *Scenario) Validate() error {
	errs := &errorList{main: s.File}
	validate(s, func(field string, _ []string, msg string) {
		errs.add(Error{File: s.File, Field: field, Msg: msg})
	})
	return errs.err()
}

// reporter receives one mistake: the canonical field it is about, the
// other fields the check read (an error about them makes this one moot)
// and the message.
type reporter func(field string, related []string, msg string)

// validate runs every check on s, reporting each mistake to rep.
func validate(s *Scenario, rep reporter) {
	v := validator{s: s, rep: rep, traces: newTraceCheck(s.File)}
	v.top()
	v.network("network.up", s.Network.Up)
	v.network("network.down", s.Network.Down)
	v.mtu("network.up_mtu", s.Network.UpMTU)
	v.mtu("network.down_mtu", s.Network.DownMTU)
	v.hops()
	v.screen()
	v.agent()
	v.viewer()
	v.clock("clocks.agent", s.Clocks.Agent)
	v.clock("clocks.viewer", s.Clocks.Viewer)
	v.controller()
	v.switches()
	v.path()
	v.traffic()
	v.expectations()
}

type validator struct {
	s      *Scenario
	rep    reporter
	traces *traceCheck // loads each trace (and recording) the scenario names once
}

func (v validator) errf(field string, related []string, format string, args ...any) {
	v.rep(field, related, fmtf(format, args...))
}

func (v validator) top() {
	s := v.s
	switch {
	case s.Name == "":
		v.rep("name", nil, missing("scenario", "name"))
	case !namePattern.MatchString(s.Name):
		v.errf("name", nil, "%q is not a valid name: expected lower-case words joined by '-', like lan-animation", s.Name)
	}
	if strings.TrimSpace(s.Description) == "" {
		v.rep("description", nil, missing("scenario", "description"))
	}
	for i, id := range s.Findings {
		f := "findings" + idx(i)
		switch {
		case !findingID.MatchString(id):
			v.errf(f, nil, "unknown finding %q: expected N1-N20 or E1-E14, the IDs of FINDINGS.md", id)
		case slices.Index(s.Findings, id) < i:
			v.errf(f, nil, "finding %s is listed twice", id)
		}
	}
	switch {
	case s.ECN == "" || slices.Contains(SessionECNs, s.ECN):
	case s.ECN == "l4s":
		v.errf("ecn", nil, "the session's ECN cannot be l4s: quic-go has no scalable (L4S) response to marks; expected classic")
	default:
		v.rep("ecn", nil, checkName(s.ECN, "ECN mode", "sessionecns", SessionECNs))
	}
	for i, g := range s.Groups {
		f := "groups" + idx(i)
		if msg := checkName(g, "group", "groups", Groups); msg != "" {
			v.rep(f, nil, msg)
		} else if slices.Index(s.Groups, g) < i {
			v.errf(f, nil, "group %s is listed twice", g)
		}
	}
	switch {
	case s.Duration == 0:
		v.rep("duration", nil, missing("scenario", "duration"))
	case s.Duration < 0:
		v.errf("duration", nil, "%s out of range: expected a duration above 0s", FormatDuration(s.Duration))
	}
}

// at checks a timeline instant: not negative, after the previous one and
// before the end.
func (v validator) at(field string, at time.Duration, i int, prevField string, prev time.Duration) {
	switch {
	case at < 0:
		v.errf(field, nil, "%s out of range: expected a time of 0s or more", FormatDuration(at))
	case i > 0 && at <= prev:
		v.errf(field, []string{prevField}, "%s out of order: expected a time after the previous one, %s", FormatDuration(at), FormatDuration(prev))
	case v.s.Duration > 0 && at >= v.s.Duration:
		v.errf(field, []string{"duration"}, "%s is not before the end: the scenario lasts %s", FormatDuration(at), FormatDuration(v.s.Duration))
	}
}

// nonNeg reports a negative duration.
func (v validator) nonNeg(field string, d time.Duration) {
	if d < 0 {
		v.errf(field, nil, "%s out of range: expected a duration of 0s or more", FormatDuration(d))
	}
}

// fraction reports a fraction outside [0, 1].
func (v validator) fraction(field string, f float64) {
	if !(f >= 0 && f <= 1) {
		v.errf(field, nil, "%s out of range: expected a percentage from 0%% to 100%%", FormatPercent(f))
	}
}

// mtu refuses a path MTU a link cannot have: below IPv4's minimum, or
// above what a length field holds. One below QUIC's 1308 is a path the
// session cannot cross, which the run reports; the loader leaves it be, as
// a scenario may show just that.
func (v validator) mtu(field string, mtu int) {
	if mtu != 0 && (mtu < netem.MinMTU || mtu > 65535) {
		v.errf(field, nil, "%s out of range: expected a size from %s to 65535B", FormatBytes(mtu), FormatBytes(netem.MinMTU))
	}
}

func (v validator) network(dir string, phases []Phase) {
	for i, ph := range phases {
		p := dir + idx(i)
		var prev time.Duration
		if i > 0 {
			prev = phases[i-1].At
		}
		v.at(p+".at", ph.At, i, dir+idx(i-1)+".at", prev)
		v.nonNeg(p+".delay", ph.Delay)
		if j := ph.Jitter; j != nil {
			switch {
			case j.Spread == 0:
				v.rep(p+".jitter.spread", nil, missing("jitter", "spread"))
			case j.Spread < 0:
				v.errf(p+".jitter.spread", nil, "%s out of range: expected a duration above 0s", FormatDuration(j.Spread))
			}
			if j.Distribution != "" {
				if msg := checkName(j.Distribution, "distribution", "", JitterDistributions); msg != "" {
					v.rep(p+".jitter.distribution", nil, msg)
				}
			}
			v.fraction(p+".jitter.correlation", j.Correlation)
		}
		v.fraction(p+".loss", ph.Loss)
		if g := ph.Gilbert; g != nil {
			if g.P == 0 {
				v.rep(p+".gilbert.p", nil, missing("gilbert", "p"))
			}
			v.fraction(p+".gilbert.p", g.P)
			v.fraction(p+".gilbert.r", g.R)
			v.fraction(p+".gilbert.1-h", g.OneMinusH)
			v.fraction(p+".gilbert.1-k", g.OneMinusK)
			if ph.Loss > 0 {
				v.rep(p+".gilbert", []string{p + ".loss"}, "gilbert and loss together: expected one loss model, Gilbert-Elliott or independent loss")
			}
		}
		v.fraction(p+".duplicate", ph.Duplicate)
		v.fraction(p+".corrupt", ph.Corrupt)
		if ph.Rate < 0 {
			v.errf(p+".rate", nil, "%s out of range: expected a rate above 0bit/s", FormatRate(ph.Rate))
		}
		if ph.Overhead < 0 {
			v.errf(p+".overhead", nil, "%s out of range: expected a size of 0B or more", FormatBytes(ph.Overhead))
		}
		bottleneck := ph.Rate > 0 || ph.Trace != nil
		if ph.Overhead > 0 && !bottleneck {
			v.rep(p+".overhead", []string{p + ".rate", p + ".trace"}, "overhead without rate or trace: it only counts against a bottleneck")
		}
		if ph.Trace != nil {
			if ph.Rate > 0 {
				v.rep(p+".trace", []string{p + ".rate"}, "trace and rate together: a trace is the link's capacity; expected one or the other")
			}
			v.traces.check(v, p+".trace", ph.Trace)
		}
		q := ph.Queue
		if q.Bytes < 0 || q.Packets < 0 || q.Delay < 0 {
			v.rep(p+".queue", nil, "negative queue limit: expected limits above 0 (leave one out for no limit)")
		}
		if q.CoDel && q.PIE {
			v.rep(p+".queue.pie", []string{p + ".queue.codel"}, "codel and pie together: a queue has one active queue management; expected one or the other")
		}
		if q.Cake != "" {
			if msg := checkName(q.Cake, "host isolation", "", CakeModes); msg != "" {
				v.rep(p+".queue.cake", nil, msg)
			}
		}
		seen := q.CoDel || q.PIE
		for _, s := range []struct {
			set       bool
			key, name string
			limit     string
			bytes     bool // a byte limit applies
		}{{q.FQCoDel, "fq_codel", "FQ-CoDel", "10240", true}, {q.Cake != "", "cake", "CAKE", "10240", true}, {q.DualPI2, "dualpi2", "DualPI2", "10000", false}} {
			if !s.set {
				continue
			}
			switch {
			case seen:
				v.errf(p+".queue."+s.key, nil, "%s with another active queue management: a queue has one; expected one of codel, pie, fq_codel, cake and dualpi2", s.key)
			case q.Delay > 0:
				v.errf(p+".queue."+s.key, []string{p + ".queue.delay"}, "%s with a delay limit: %s's queue is bounded in packets (%s when left out) or bytes", s.key, s.name, s.limit)
			case q.Bytes > 0 && !s.bytes:
				v.errf(p+".queue."+s.key, []string{p + ".queue.bytes"}, "%s with a byte limit: %s's queue is bounded in packets (%s when left out)", s.key, s.name, s.limit)
			case ph.Trace != nil:
				v.errf(p+".queue."+s.key, []string{p + ".trace"}, "%s behind a trace: %s is a rate's queue only", s.key, s.name)
			}
			seen = true
		}
		if q != (Queue{}) && !bottleneck {
			v.rep(p+".queue", []string{p + ".rate", p + ".trace"}, "queue without rate or trace: a queue forms only at a bottleneck")
		}
		if sp := ph.Spikes; sp != nil {
			v.spikes(p+".spikes", sp)
		}
		if o := ph.Outages; o != nil {
			v.outages(p+".outages", o)
		}
	}
}

func (v validator) spikes(p string, s *Spikes) {
	v.nonNeg(p+".min", s.Min)
	switch {
	case s.Max == 0:
		v.rep(p+".max", nil, missing("spikes", "max"))
	case s.Max < 0:
		v.errf(p+".max", nil, "%s out of range: expected a duration above 0s", FormatDuration(s.Max))
	case s.Min > s.Max:
		v.errf(p+".min", []string{p + ".max"}, "%s is greater than max %s: expected min <= max", FormatDuration(s.Min), FormatDuration(s.Max))
	}
	switch {
	case s.Every == 0:
		v.rep(p+".every", nil, missing("spikes", "every"))
	case s.Every < 0:
		v.errf(p+".every", nil, "%s out of range: expected a duration above 0s", FormatDuration(s.Every))
	}
	switch {
	case s.Duration == 0:
		v.rep(p+".duration", nil, missing("spikes", "duration"))
	case s.Duration < 0:
		v.errf(p+".duration", nil, "%s out of range: expected a duration above 0s", FormatDuration(s.Duration))
	case s.Every > 0 && s.Duration > s.Every:
		v.errf(p+".duration", []string{p + ".every"}, "%s is longer than every %s: spikes would overlap", FormatDuration(s.Duration), FormatDuration(s.Every))
	}
	v.nonNeg(p+".offset", s.Offset)
}

func (v validator) outages(p string, o *Outages) {
	periodic := o.Every != 0 || o.Duration != 0 || o.Offset != 0
	switch {
	case len(o.Windows) > 0 && periodic:
		v.rep(p+".windows", []string{p + ".every", p + ".duration", p + ".offset"}, "windows with every, duration or offset: expected either a list of windows or a period")
	case len(o.Windows) == 0:
		switch {
		case o.Every == 0:
			v.rep(p+".every", nil, missing("outages", "every"))
		case o.Every < 0:
			v.errf(p+".every", nil, "%s out of range: expected a duration above 0s", FormatDuration(o.Every))
		}
		switch {
		case o.Duration == 0:
			v.rep(p+".duration", nil, missing("outages", "duration"))
		case o.Duration < 0:
			v.errf(p+".duration", nil, "%s out of range: expected a duration above 0s", FormatDuration(o.Duration))
		case o.Every > 0 && o.Duration > o.Every:
			v.errf(p+".duration", []string{p + ".every"}, "%s is longer than every %s: outages would overlap", FormatDuration(o.Duration), FormatDuration(o.Every))
		}
		v.nonNeg(p+".offset", o.Offset)
	}
	for i, w := range o.Windows {
		wp := p + ".windows" + idx(i)
		v.nonNeg(wp+".start", w.Start)
		if w.Duration <= 0 {
			v.errf(wp+".duration", nil, "%s out of range: expected a duration above 0s", FormatDuration(w.Duration))
		}
		if i > 0 {
			if end := o.Windows[i-1].Start + o.Windows[i-1].Duration; w.Start < end {
				v.errf(wp+".start", []string{p + ".windows" + idx(i-1)}, "%s out of order: expected a start at or after the previous window's end, %s", FormatDuration(w.Start), FormatDuration(end))
			}
		}
		if v.s.Duration > 0 && w.Start >= v.s.Duration {
			v.errf(wp+".start", []string{"duration"}, "%s is not before the end: the scenario lasts %s", FormatDuration(w.Start), FormatDuration(v.s.Duration))
		}
	}
}

func (v validator) screen() { v.screenAt("screen", v.s.Screen) }

// screenAt checks a screen timeline written at sp: the scenario's, or a
// session flow's.
func (v validator) screenAt(sp string, screen []ScreenPhase) {
	refresh := v.s.Agent.Refresh
	if refresh == 0 {
		refresh = 60
	}
	for i, ph := range screen {
		p := sp + idx(i)
		var prev time.Duration
		if i > 0 {
			prev = screen[i-1].At
		}
		v.at(p+".at", ph.At, i, sp+idx(i-1)+".at", prev)
		if ph.Source == "" {
			v.rep(p+".source", nil, missing("screen_phase", "source"))
			continue
		}
		if msg := checkName(ph.Source, "source", "", Sources); msg != "" {
			v.rep(p+".source", nil, msg)
			continue
		}
		has := func(field string, set bool) bool {
			if set && !slices.Contains(sourceFields[ph.Source], field) {
				v.errf(p+"."+field, []string{p + ".source"}, "%s does not apply to %s: %s applies to %s", field, ph.Source, field, list(sourcesWith(field)))
				return false
			}
			return set
		}
		if has("complexity", ph.Complexity != 0) {
			v.fraction(p+".complexity", ph.Complexity)
		}
		has("file", ph.File != "")
		has("offset", ph.Offset != 0)
		has("loop", ph.NoLoop)
		if ph.Source == recordingSource {
			v.traces.recording(v, p, ph)
		}
		if has("rate", ph.Rate != 0) && !(ph.Rate > 0 && ph.Rate <= 10*refresh) {
			v.errf(p+".rate", []string{"agent.refresh"}, "%s out of range: expected changes per second above 0 and at most %s (ten per refresh)", fmtFloat(ph.Rate), fmtFloat(10*refresh))
		}
		if r := ph.Region; has("region", r != nil) {
			rp := p + ".region"
			for _, f := range []struct {
				name string
				v    float64
				zero bool
			}{{"x", r.X, true}, {"y", r.Y, true}, {"w", r.W, false}, {"h", r.H, false}} {
				if f.v == 0 && !f.zero {
					v.errf(rp+"."+f.name, nil, "0%% out of range: expected a percentage above 0%%")
				} else {
					v.fraction(rp+"."+f.name, f.v)
				}
			}
			const eps = 1e-9 // percentages that add to 100% in decimal may not in binary
			if r.X+r.W > 1+eps {
				v.errf(rp+".w", []string{rp + ".x"}, "x %s + w %s is past the screen's right edge: expected x + w <= 100%%", FormatPercent(r.X), FormatPercent(r.W))
			}
			if r.Y+r.H > 1+eps {
				v.errf(rp+".h", []string{rp + ".y"}, "y %s + h %s is past the screen's bottom edge: expected y + h <= 100%%", FormatPercent(r.Y), FormatPercent(r.H))
			}
		}
	}
}

func (v validator) agent() {
	a := v.s.Agent
	soft, hard := SoftwarePresets(), HardwarePresets()
	known := encodersKnown() // the names are checked only when the lab told them
	if a.Encoder != "" && known {
		if slices.Contains(hard, a.Encoder) {
			v.errf("agent.encoder", nil, "%s is a hardware preset: list it under hardware; encoder takes a software preset, one of %s", a.Encoder, list(soft))
		} else if msg := checkName(a.Encoder, "encoder preset", "", soft); msg != "" {
			v.rep("agent.encoder", nil, msg)
		}
	}
	if why := presetMissing(a.Encoder); why != "" {
		v.errf("agent.encoder", nil, "%s cannot run in this build: %s", a.Encoder, why)
	}
	v.dist("agent.encode_time", a.EncodeTime)
	if a.FrameSizes != "" {
		if msg := checkName(a.FrameSizes, "frame sizes", "", FrameSizes); msg != "" {
			v.rep("agent.frame_sizes", nil, msg)
		} else if IsRealPreset(a.Encoder) {
			v.errf("agent.frame_sizes", []string{"agent.encoder"}, "frame_sizes does not apply to %s: its frames are a real encoder's bytes, not the H.264 model's", a.Encoder)
		}
	}
	if pol := v.s.Viewer.Policy; pol != "" {
		if msg := checkName(pol, "viewer policy", "", ViewerPolicies); msg != "" {
			v.rep("viewer.policy", nil, msg)
		} else if pol == "refresh" && (IsRealPreset(a.Encoder) || isLossless(a.Encoder)) {
			v.errf("viewer.policy", []string{"agent.encoder"}, "refresh needs an encoder with a rolling intra refresh: the H.264 model has one, %s has none (use drop, wait or keyframe)", a.Encoder)
		}
	}
	if isLossless(a.Encoder) {
		// A real codec's encode time is a model of its measured
		// throughput, and it has no bitrate to restart on (N16).
		if a.EncodeTime != nil {
			v.errf("agent.encode_time", []string{"agent.encoder"}, "encode_time does not apply to %s: a lossless encoder's encode time comes from its codec's measured throughput", a.Encoder)
		}
		if v.s.Switches.OldRestartOnBitrateChange {
			v.errf("switches.old_restart_on_bitrate_change", []string{"agent.encoder"}, "old_restart_on_bitrate_change does not apply to %s: a lossless encoder has no rate control to restart", a.Encoder)
		}
	}
	for i, h := range a.Hardware {
		f := "agent.hardware" + idx(i)
		switch {
		case known && slices.Contains(soft, h):
			v.errf(f, nil, "%s is a software preset: name it as the encoder; hardware takes one of %s", h, list(hard))
		case known && !slices.Contains(hard, h):
			v.rep(f, nil, checkName(h, "hardware preset", "", hard))
		case slices.Index(a.Hardware, h) < i:
			v.errf(f, nil, "%s is listed twice", h)
		}
	}
	for _, l := range []struct {
		key   string
		names []string
	}{{"absent", a.Absent}, {"failing", a.Failing}} {
		for i, h := range l.names {
			f := "agent." + l.key + idx(i)
			switch {
			case !slices.Contains(a.Hardware, h):
				v.errf(f, []string{"agent.hardware"}, "%s is not listed in hardware: %s names hardware the agent probes, expected one of [%s]", h, l.key, list(a.Hardware))
			case slices.Index(l.names, h) < i:
				v.errf(f, nil, "%s is listed twice", h)
			case l.key == "failing" && slices.Contains(a.Absent, h):
				v.errf(f, []string{"agent.absent"}, "%s is both absent and failing: absent hardware cannot fail to open; expected one or the other", h)
			}
		}
	}
	if !(a.Refresh >= 0 && a.Refresh <= maxRefresh) {
		v.errf("agent.refresh", nil, "%s out of range: expected a frequency above 0Hz and at most 1000Hz", FormatHz(a.Refresh))
	}
	if a.SendCap < 0 {
		v.errf("agent.send_cap", nil, "%s out of range: expected a size above 0B", FormatBytes(a.SendCap))
	}
	if a.RefinePasses < 0 {
		v.errf("agent.refine.passes", nil, "%d out of range: expected a number of passes from 1", a.RefinePasses)
	}
	v.nonNeg("agent.refine.every", a.RefineEvery)
	if a.NoRefine && (a.RefinePasses != 0 || a.RefineEvery != 0) {
		v.rep("agent.refine", nil, "refine off with passes or every: expected off or {passes, every}")
	}
}

// dist checks a duration distribution, with the rules of internal/dist:
// a list, a normal (SD > 0, clamped to [Min, Max] with Max 0 meaning no
// upper bound), a uniform (Min or Max set) or a constant (Mean).
func (v validator) dist(p string, d *Dist) {
	if d == nil {
		return
	}
	if d.List != nil {
		if len(d.List) == 0 {
			v.rep(p, nil, "empty list: expected at least one duration, like [5ms, 7ms]")
		}
		for i, x := range d.List {
			v.nonNeg(p+idx(i), x)
		}
		return
	}
	for _, f := range []struct {
		key string
		d   time.Duration
	}{{"mean", d.Mean}, {"sd", d.SD}, {"min", d.Min}, {"max", d.Max}} {
		v.nonNeg(p+"."+f.key, f.d)
	}
	switch {
	case d.SD > 0 && d.Max > 0 && d.Min > d.Max:
		v.errf(p+".min", []string{p + ".max"}, "%s is greater than max %s: expected min <= max", FormatDuration(d.Min), FormatDuration(d.Max))
	case d.SD == 0 && (d.Min != 0 || d.Max != 0) && d.Mean != 0:
		v.rep(p, nil, "mean with min and max: add sd for a normal clamped to [min, max], or leave mean out for a uniform")
	case d.SD == 0 && d.Min > d.Max:
		v.errf(p+".min", []string{p + ".max"}, "%s is greater than max %s: expected min <= max", FormatDuration(d.Min), FormatDuration(d.Max))
	}
}

func (v validator) viewer() {
	w := v.s.Viewer
	v.dist("viewer.decode", w.Decode)
	if !(w.Refresh >= 0 && w.Refresh <= maxRefresh) {
		v.errf("viewer.refresh", nil, "%s out of range: expected a frequency above 0Hz and at most 1000Hz", FormatHz(w.Refresh))
	}
	v.nonNeg("viewer.present", w.Present)
}

func (v validator) clock(p string, c Clock) {
	if !(c.DriftPPM >= -maxDriftPPM && c.DriftPPM <= maxDriftPPM) {
		v.errf(p+".drift", nil, "%s out of range: expected a drift from -1000ppm to 1000ppm (PC clocks drift by tens of ppm)", FormatPPM(c.DriftPPM))
	}
}

// shareRange is the range of a controller percentage that is not a plain
// 0%-100% one: what says it in a message, in checks a fraction.
type shareRange struct {
	what string
	in   func(float64) bool
}

var (
	// A decrease of 100% would cut the bitrate to nothing.
	decreaseRange = shareRange{"a decrease above 0% and below 100%", func(f float64) bool { return f > 0 && f < 1 }}
	// An increase may exceed 100% (more than doubling).
	increaseRange = shareRange{"an increase above 0%", func(f float64) bool { return f > 0 && !math.IsInf(f, 1) }}
)

// controllerKind is the kind a controller runs as: a Scenario built in Go
// without one has a fixed bitrate (the loader writes fixed, or steps when
// steps are given).
func controllerKind(c Controller) string {
	if c.Kind == "" {
		return "fixed"
	}
	return c.Kind
}

func (v validator) controller() { v.controllerAt("controller", v.s.Controller) }

// controllerAt checks a controller written at p: the scenario's, or a
// session flow's.
func (v validator) controllerAt(p string, c Controller) {
	if c.Kind != "" {
		if msg := checkName(c.Kind, "controller kind", "controller.kind", ControllerKinds); msg != "" {
			v.rep(p+".kind", nil, msg)
			return
		}
	}
	kind := controllerKind(c)
	// has reports a key the kind does not read, and tells whether the key
	// is set and read, so that its value is checked.
	has := func(key string, set bool) bool {
		if set && !slices.Contains(kindFields[kind], key) {
			v.errf(p+"."+key, []string{p + ".kind"}, "%s does not apply to kind %s: %s applies to kind %s", key, kind, key, orList(kindsWith(key)))
			return false
		}
		return set
	}
	if c.Bitrate < 0 {
		v.errf(p+".bitrate", nil, "%s out of range: expected a rate above 0bit/s", FormatRate(c.Bitrate))
	}
	switch {
	case kind == "steps" && len(c.Steps) == 0:
		v.rep(p+".steps", []string{p + ".kind"}, missing("controller", "steps"))
	case kind == "fixed" && len(c.Steps) > 0:
		v.rep(p+".steps", []string{p + ".kind"}, "steps with kind fixed: a fixed controller never changes its bitrate; expected kind: steps")
	default:
		has("steps", len(c.Steps) > 0)
	}
	for i, st := range c.Steps {
		sp := p + ".steps" + idx(i)
		var prev time.Duration
		if i > 0 {
			prev = c.Steps[i-1].At
		}
		v.at(sp+".at", st.At, i, p+".steps"+idx(i-1)+".at", prev)
		if st.Bitrate <= 0 {
			v.rep(sp+".bitrate", nil, missing("step", "bitrate"))
		}
	}

	// An adaptive controller's bounds, when given, hold the initial bitrate.
	lo, hi := has("min", c.Min != 0), has("max", c.Max != 0)
	if lo && c.Min < 0 {
		v.errf(p+".min", nil, "%s out of range: expected a rate above 0bit/s", FormatRate(c.Min))
	}
	if hi && c.Max < 0 {
		v.errf(p+".max", nil, "%s out of range: expected a rate above 0bit/s", FormatRate(c.Max))
	}
	switch {
	case c.Min < 0 || c.Max < 0 || c.Bitrate < 0: // reported above
	case lo && hi && c.Min > c.Max:
		v.errf(p+".min", []string{p + ".max"}, "%s is greater than max %s: expected min <= max", FormatRate(c.Min), FormatRate(c.Max))
	case lo && c.Bitrate > 0 && c.Bitrate < c.Min:
		v.errf(p+".bitrate", []string{p + ".min"}, "%s is below min %s: expected an initial bitrate from min to max", FormatRate(c.Bitrate), FormatRate(c.Min))
	case hi && c.Bitrate > c.Max:
		v.errf(p+".bitrate", []string{p + ".max"}, "%s is above max %s: expected an initial bitrate from min to max", FormatRate(c.Bitrate), FormatRate(c.Max))
	}

	// The ABR's rule (N10).
	for _, f := range []struct {
		key string
		d   time.Duration
	}{{"window", c.Window}, {"baseline", c.Baseline}, {"threshold", c.Threshold},
		{"sustain", c.Sustain}, {"close", c.Close}, {"hold", c.Hold}} {
		if has(f.key, f.d != 0) && f.d < 0 {
			v.errf(p+"."+f.key, nil, "%s out of range: expected a duration above 0s", FormatDuration(f.d))
		}
	}
	if c.Window > 0 && c.Baseline > 0 && c.Baseline < c.Window && kind == "abr" {
		v.errf(p+".baseline", []string{p + ".window"}, "%s is shorter than window %s: expected baseline >= window (the median over the window is compared with the minimum over the baseline)", FormatDuration(c.Baseline), FormatDuration(c.Window))
	}
	for _, f := range []struct {
		key string
		f   float64
		r   shareRange
	}{{"decrease", c.Decrease, decreaseRange}, {"increase", c.Increase, increaseRange}} {
		if has(f.key, f.f != 0) && !f.r.in(f.f) {
			v.errf(p+"."+f.key, nil, "%s out of range: expected %s", FormatPercent(f.f), f.r.what)
		}
	}
	if has("guard", c.Guard != 0) {
		v.fraction(p+".guard", c.Guard)
	}
}

// switches checks that the ABR's old-behaviour switches go with the ABR.
func (v validator) switches() {
	kind := controllerKind(v.s.Controller)
	if kind == "abr" || !slices.Contains(ControllerKinds, kind) {
		return
	}
	sw := v.s.Switches
	for i, on := range []bool{sw.OldABRTotalLatency, sw.OldABRIgnoresUtilisation, sw.OldABRSinglePeaks} {
		if on {
			key := abrSwitches[i]
			v.errf("switches."+key, []string{"controller.kind"}, "%s does not apply to controller kind %s: %s applies to controller kind abr", key, kind, key)
		}
	}
}

func (v validator) expectations() {
	for i, e := range v.s.Expect {
		p := "expect" + idx(i)
		if e.Measure == "" {
			v.rep(p+".measure", nil, missing("expectation", "measure"))
			continue
		}
		m, ok := LookupMeasurement(e.Measure)
		if !ok {
			names := make([]string, len(Measurements))
			for i, m := range Measurements {
				names[i] = m.Name
			}
			v.rep(p+".measure", nil, checkName(e.Measure, "measurement", "", names))
			continue
		}
		if e.Min == nil && e.Max == nil {
			v.rep(p, nil, "missing a bound: expected min, max or both")
		}
		for _, b := range []struct {
			key string
			v   *float64
		}{{"min", e.Min}, {"max", e.Max}} {
			if b.v == nil {
				continue
			}
			switch x := *b.v; {
			case m.Unit == UnitCorrelation && !(x >= -1 && x <= 1):
				v.errf(p+"."+b.key, nil, "%s out of range: expected a correlation from -1 to 1", fmtValue(m, x))
			case m.Unit == UnitCorrelation:
			case !(x >= 0):
				v.errf(p+"."+b.key, nil, "%s out of range: expected %s of 0 or more", fmtValue(m, x), m.Name)
			case m.Unit == UnitFraction && x > 1:
				v.errf(p+"."+b.key, nil, "%s out of range: expected a percentage from 0%% to 100%%", fmtValue(m, x))
			case m.Unit == UnitCount && x != float64(int64(x)):
				v.errf(p+"."+b.key, nil, "%s is not a whole number: %s is a count", fmtValue(m, x), m.Name)
			}
		}
		if e.Min != nil && e.Max != nil && *e.Min > *e.Max {
			v.errf(p+".min", []string{p + ".max"}, "%s is greater than max %s: expected min <= max", fmtValue(m, *e.Min), fmtValue(m, *e.Max))
		}
		v.expectationKeys(p, m, e)
		// A band says what this scenario's runs measured; a requirement
		// and an expected failure say what the product should do. One
		// bound is one of them.
		switch {
		case e.Band && e.Required != "":
			v.errf(p+".band", []string{p + ".required"}, "a band is not required: expected band (bounds measured from this scenario's runs) or required (what requires the bound), not both")
		case e.Band && e.ExpectedFailure != "":
			v.errf(p+".band", []string{p + ".expected_failure"}, "a band cannot be an expected failure: it is what the runs measured, and an expected failure is a requirement the product misses")
		}
		v.nonNeg(p+".from", e.From)
		switch {
		case e.To < 0:
			v.nonNeg(p+".to", e.To)
		case e.To > 0 && e.To <= e.From:
			v.errf(p+".to", []string{p + ".from"}, "%s is not after from %s: expected a window that ends after it starts", FormatDuration(e.To), FormatDuration(e.From))
		case e.To > 0 && v.s.Duration > 0 && e.To > v.s.Duration:
			v.errf(p+".to", []string{"duration"}, "%s is after the end: the scenario lasts %s (write end for the end)", FormatDuration(e.To), FormatDuration(v.s.Duration))
		case v.s.Duration > 0 && e.From >= v.s.Duration:
			v.errf(p+".from", []string{"duration"}, "%s is not before the end: the scenario lasts %s", FormatDuration(e.From), FormatDuration(v.s.Duration))
		}
	}
}

// expectationKeys checks the keys an expectation gives its measurement
// (latency, at, every) both ways: each key the measurement reads is there
// and in range, and no other is given. A measurement taken at an instant
// has no window, so from and to do not apply to it.
func (v validator) expectationKeys(p string, m Measurement, e Expectation) {
	reads := MeasurementKeys(m.Name)
	for _, k := range []struct {
		key string
		d   time.Duration
	}{{"latency", e.Latency}, {"at", e.At}, {"every", e.Every}} {
		field := p + "." + k.key
		switch read := slices.Contains(reads, k.key); {
		case k.d != 0 && !read:
			v.errf(field, []string{p + ".measure"}, "%s does not apply to %s: %s applies to %s", k.key, m.Name, k.key, orList(measurementsWith(k.key)))
		case k.d == 0 && read:
			v.errf(field, []string{p + ".measure"}, "missing required field: %s needs %s: expected %s", m.Name, k.key, fieldOf(reflect.TypeFor[Expectation](), k.key).missing)
		case k.d < 0:
			v.errf(field, nil, "%s out of range: expected a duration above 0s", FormatDuration(k.d))
		}
	}
	switch read := slices.Contains(reads, "flow"); {
	case e.Flow != "" && !read:
		v.errf(p+".flow", []string{p + ".measure"}, "flow does not apply to %s: flow applies to %s", m.Name, orList(measurementsWith("flow")))
	case e.Flow == "" && read:
		v.errf(p+".flow", []string{p + ".measure"}, "missing required field: %s needs flow: expected %s", m.Name, fieldOf(reflect.TypeFor[Expectation](), "flow").missing)
	case read:
		v.flow(p+".flow", m.Name, e.Flow)
	}
	if m.Name == "fairness.jain" && !slices.ContainsFunc(v.s.Traffic, func(f Flow) bool { return f.Kind == "session" }) {
		v.errf(p+".measure", []string{"traffic"}, "fairness.jain needs two media sessions on the downlink: expected a traffic flow of kind session beside the scenario's own")
	}
	if slices.Contains(reads, "at") {
		for _, w := range []struct {
			key string
			d   time.Duration
		}{{"from", e.From}, {"to", e.To}} {
			if w.d != 0 {
				v.errf(p+"."+w.key, []string{p + ".measure"}, "%s does not apply to %s: it is measured at one instant, at, not over a window", w.key, m.Name)
			}
		}
		if e.At > 0 && v.s.Duration > 0 && e.At > v.s.Duration {
			v.errf(p+".at", []string{"duration"}, "%s is after the end: the scenario lasts %s", FormatDuration(e.At), FormatDuration(v.s.Duration))
		}
	}
	// A correlation of two points is always 1 or -1: it takes three
	// periods to say anything.
	end := e.To
	if end == 0 {
		end = v.s.Duration
	}
	if e.Every > 0 && slices.Contains(reads, "every") && end > e.From && 3*e.Every > end-e.From {
		v.errf(p+".every", []string{p + ".from", p + ".to", "duration"}, "%s is too long for the window [%s, %s): expected at most a third of it (a correlation needs three periods)",
			FormatDuration(e.Every), FormatDuration(e.From), FormatDuration(end))
	}
}

// flow checks the flow a flow measurement names: main, or a flow of the
// scenario's traffic; a latency, only of a remote-desktop session.
func (v validator) flow(field, measure, name string) {
	if name == MainFlow {
		return
	}
	names := []string{MainFlow}
	for _, f := range v.s.Traffic {
		names = append(names, f.Name)
	}
	i := slices.IndexFunc(v.s.Traffic, func(f Flow) bool { return f.Name == name })
	switch {
	case i < 0:
		msg := fmtf("unknown flow %q:", name)
		if s := closest(name, names); s != "" {
			msg += " did you mean " + s + "?"
		}
		v.errf(field, []string{"traffic"}, "%s expected main or a flow of traffic: %s", msg, list(names))
	case strings.HasPrefix(measure, "flow.latency.") && !IsMediaFlow(v.s.Traffic[i].Kind):
		v.errf(field, []string{"traffic" + idx(i) + ".kind"}, "%s has no latency: %s is a %s flow; expected main or a flow of kind session or reverse-media", measure, name, v.s.Traffic[i].Kind)
	case measure == "flow.share" && len(v.s.Traffic[i].Hops) > 0:
		v.errf(field, []string{"traffic" + idx(i) + ".hops"}, "flow.share of %s, which crosses part of the path (hops %v): a share counts over the path's narrowest hop, which it may not cross; expected flow.throughput", name, v.s.Traffic[i].Hops)
	}
}

// hops checks a path of several hops: two or more, each named once, each
// direction's timeline and MTU as the network's own.
func (v validator) hops() {
	hops := v.s.Network.Hops
	if len(hops) == 1 {
		v.errf("network.hops", nil, "a path of one hop: expected two hops or more (one hop is the network's own down and up)")
	}
	for i, h := range hops {
		p := "network.hops" + idx(i)
		switch {
		case h.Name == "":
			v.rep(p+".name", nil, missing("hop", "name"))
		case !namePattern.MatchString(h.Name):
			v.errf(p+".name", nil, "%q is not a valid name: expected lower-case words joined by '-', like access", h.Name)
		case slices.IndexFunc(hops, func(g Hop) bool { return g.Name == h.Name }) < i:
			v.errf(p+".name", nil, "hop %s is named twice: expected a name of its own (flows and results tell hops apart by it)", h.Name)
		}
		v.network(p+".up", h.Up)
		v.network(p+".down", h.Down)
		v.mtu(p+".up_mtu", h.UpMTU)
		v.mtu(p+".down_mtu", h.DownMTU)
	}
}

// flowHops checks the hops a flow crosses: names of the path's hops,
// consecutive, in the path's order.
func (v validator) flowHops(p string, f Flow) {
	var names []string
	for _, h := range v.s.Network.Hops {
		names = append(names, h.Name)
	}
	if len(names) == 0 {
		v.errf(p+".hops", []string{"network.hops"}, "hops %v, but the network is one pair of links: expected network.hops to name the path's hops, or no hops here", f.Hops)
		return
	}
	first := -1
	for k, name := range f.Hops {
		i := slices.Index(names, name)
		switch {
		case i < 0:
			msg := fmtf("unknown hop %q:", name)
			if s := closest(name, names); s != "" {
				msg += " did you mean " + s + "?"
			}
			v.errf(p+".hops"+idx(k), []string{"network.hops"}, "%s expected a hop of network.hops: %s", msg, list(names))
			return
		case k == 0:
			first = i
		case i != first+k:
			v.errf(p+".hops", []string{"network.hops"}, "hops %v are not consecutive in the path's order %v: expected hops a flow crosses one after another, like [%s]", f.Hops, names, names[len(names)-1])
			return
		}
	}
}

// measurementsWith lists the measurements that read an expectation's key,
// for error messages.
func measurementsWith(key string) []string {
	var out []string
	for _, m := range Measurements {
		if slices.Contains(m.Keys, key) {
			out = append(out, m.Name)
		}
	}
	return out
}

// orList writes names for a message as alternatives: "a", "a or b",
// "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return list(names)
	}
	return list(names[:len(names)-1]) + " or " + names[len(names)-1]
}

// idx writes a list index: "[2]".
func idx(i int) string { return "[" + itoa(i) + "]" }

// The defaults of a web flow's object sizes (netem/flows' WebConfig, which
// a test in lab holds equal): a min or max given alone is checked against
// the other's default.
const (
	webDefaultMin = 100
	webDefaultMax = 2 << 20
)

// traffic checks the flows of other traffic: names, kinds, the keys each
// kind reads, instants inside the scenario, and each key's range.
func (v validator) traffic() {
	for i, f := range v.s.Traffic {
		p := "traffic" + idx(i)
		switch {
		case f.Name == "":
			v.rep(p+".name", nil, missing("flow", "name"))
		case !namePattern.MatchString(f.Name):
			v.errf(p+".name", nil, "%q is not a valid name: expected lower-case words joined by '-', like download", f.Name)
		case f.Name == MainFlow:
			v.errf(p+".name", nil, "main names the scenario's own session: expected another name, like download")
		case slices.IndexFunc(v.s.Traffic, func(g Flow) bool { return g.Name == f.Name }) < i:
			v.errf(p+".name", nil, "flow %s is named twice: expected a name of its own (results, measurements and captures tell flows apart by it)", f.Name)
		}
		switch {
		case f.Start < 0:
			v.errf(p+".start", nil, "%s out of range: expected a time of 0s or more", FormatDuration(f.Start))
		case v.s.Duration > 0 && f.Start >= v.s.Duration:
			v.errf(p+".start", []string{"duration"}, "%s is not before the end: the scenario lasts %s", FormatDuration(f.Start), FormatDuration(v.s.Duration))
		}
		switch {
		case f.Stop < 0:
			v.errf(p+".stop", nil, "%s out of range: expected a time above 0s", FormatDuration(f.Stop))
		case f.Stop > 0 && f.Stop <= f.Start:
			v.errf(p+".stop", []string{p + ".start"}, "%s is not after start %s: expected a flow that stops after it starts", FormatDuration(f.Stop), FormatDuration(f.Start))
		case f.Stop > 0 && v.s.Duration > 0 && f.Stop > v.s.Duration:
			v.errf(p+".stop", []string{"duration"}, "%s is after the end: the scenario lasts %s (leave stop out for the end)", FormatDuration(f.Stop), FormatDuration(v.s.Duration))
		}
		if f.Kind == "" {
			v.rep(p+".kind", nil, missing("flow", "kind"))
			continue
		}
		if msg := checkName(f.Kind, "flow kind", "", FlowKinds); msg != "" {
			v.rep(p+".kind", nil, msg)
			continue
		}
		// has reports a key the kind does not read, and tells whether the
		// key is set and read, so that its value is checked.
		has := func(key string, set bool) bool {
			if set && !slices.Contains(flowFields[f.Kind], key) {
				v.errf(p+"."+key, []string{p + ".kind"}, "%s does not apply to kind %s: %s applies to kind %s", key, f.Kind, key, orList(flowKindsWith(key)))
				return false
			}
			return set
		}
		for _, n := range []struct{ key, value, what string }{
			{"direction", f.Direction, "direction"}, {"congestion", f.Congestion, "congestion controller"}, {"ecn", f.ECN, "ECN mode"},
		} {
			if has(n.key, n.value != "") {
				if msg := checkName(n.value, n.what, "", nameLists[n.key+"s"]()); msg != "" {
					v.rep(p+"."+n.key, nil, msg)
				}
			}
		}
		if has("delay", f.Delay != 0) {
			v.nonNeg(p+".delay", f.Delay)
		}
		if f.QUICECN() && slices.Contains(flowFields[f.Kind], "ecn") {
			// QUIC's ECN: quic-go's classic response only, and through an
			// endpoint's control messages, which a flow's extra delay
			// (re-injected datagrams) does not carry.
			switch {
			case f.ECN == "l4s":
				v.errf(p+".ecn", nil, "a %s flow's ECN cannot be l4s: quic-go has no scalable (L4S) response to marks; expected classic", f.Kind)
			case f.Delay != 0:
				v.errf(p+".ecn", []string{p + ".delay"}, "a %s flow cannot be ECN-capable with a delay: the delayed endpoint re-sends its datagrams without the ECN bits quic-go sets; leave one out", f.Kind)
			}
		}
		if has("hops", len(f.Hops) > 0) {
			v.flowHops(p, f)
		}
		switch {
		case f.Kind == "cbr" && f.Rate == 0:
			v.rep(p+".rate", []string{p + ".kind"}, missing("flow", "rate"))
		case has("rate", f.Rate != 0) && f.Rate < 0:
			v.errf(p+".rate", nil, "%s out of range: expected a rate above 0bit/s", FormatRate(f.Rate))
		}
		if has("size", f.Size != 0) && (f.Size < minCBRSize || f.Size > maxDatagram) {
			v.errf(p+".size", nil, "%s out of range: expected a size from 8B to 65507B (a datagram, whose first 8 bytes carry its number)", FormatBytes(f.Size))
		}
		if o := f.Object; has("object", o != nil) {
			v.objectSizes(p+".object", o)
		}
		if has("think", f.Think != 0) && f.Think < 0 {
			v.errf(p+".think", nil, "%s out of range: expected a duration above 0s", FormatDuration(f.Think))
		}
		if has("controller", f.Controller != nil) {
			v.controllerAt(p+".controller", *f.Controller)
		}
		if has("screen", len(f.Screen) > 0) {
			v.screenAt(p+".screen", f.Screen)
		}
	}
}

// The sizes of a cbr flow's datagrams: at least its sequence number, at
// most a UDP datagram over IPv4 (netem.MaxDatagram).
const (
	minCBRSize  = 8
	maxDatagram = netem.MaxDatagram
)

// objectSizes checks a web flow's size law: sizes above 0, a range that
// holds something, the mean inside it.
func (v validator) objectSizes(p string, o *ObjectSizes) {
	bad := false
	for _, f := range []struct {
		key string
		n   int
	}{{"mean", o.Mean}, {"sd", o.SD}, {"min", o.Min}, {"max", o.Max}} {
		if f.n < 0 {
			v.errf(p+"."+f.key, nil, "%s out of range: expected a size above 0B", FormatBytes(f.n))
			bad = true
		}
	}
	if bad {
		return
	}
	lo, hi := cmp.Or(o.Min, webDefaultMin), cmp.Or(o.Max, webDefaultMax)
	switch {
	case lo > hi:
		v.errf(p+".min", []string{p + ".max"}, "%s is greater than max %s: expected min <= max", FormatBytes(lo), FormatBytes(hi))
	case o.Mean != 0 && (o.Mean < lo || o.Mean > hi):
		v.errf(p+".mean", []string{p + ".min", p + ".max"}, "%s is outside [%s, %s]: expected a mean between min and max", FormatBytes(o.Mean), FormatBytes(lo), FormatBytes(hi))
	}
}

func (v validator) path() {
	p := v.s.Path
	field := "path.connect"
	if p.Connect != "" {
		if msg := checkName(p.Connect, "strategy", "path", Paths); msg != "" {
			v.rep(field, nil, msg)
		}
	}
	for _, n := range []struct{ field, value string }{{"path.agent_nat", p.AgentNAT}, {"path.viewer_nat", p.ViewerNAT}} {
		if n.value != "" {
			if msg := checkName(n.value, "router", "nat", NATs); msg != "" {
				v.rep(n.field, nil, msg)
			}
		}
	}
	if p.RelayDelay < 0 {
		v.errf("path.relay_delay", nil, "negative delay %v: expected a delay like 2.5ms", p.RelayDelay)
	}
	if p.SameRouter && p.ViewerNAT != "" && p.ViewerNAT != "none" {
		v.errf("path.viewer_nat", []string{"path.same_router"}, "the viewer is behind the agent's router when same_router is set: leave viewer_nat out")
	}
	if p.SameRouter && (p.AgentNAT == "" || p.AgentNAT == "none") {
		v.errf("path.same_router", []string{"path.agent_nat"}, "same_router needs the router: set agent_nat (the LAN's router), e.g. port-restricted-cone")
	}
	if p.ForceRelay && (p.Connect == "direct" || p.Connect == "websocket") {
		v.errf("path.force_relay", []string{"path.connect"}, "force_relay with connect %s: the switch steers the auto strategy; use connect: auto or relay", p.Connect)
	}
}
