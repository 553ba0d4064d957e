package scenarios

import (
	"math"
	"reflect"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"
)

// MarshalYAML writes s in the scenario format, so that yaml.Marshal(s)
// gives a file Parse reads back as s: every value in its unit, zero values
// left out, the same timeline for both directions written once under
// `both`. The round trip is what the tests and the fuzz test check; it
// also lets tools write scenarios they generate (sweeps).
func (s *Scenario) MarshalYAML() (any, error) {
	m := mapping()
	m.add("name", str(s.Name))
	m.add("description", str(s.Description))
	if len(s.Findings) > 0 {
		m.add("findings", strs(s.Findings))
	}
	if len(s.Groups) > 0 {
		m.add("groups", strs(s.Groups))
	}
	m.add("duration", dur(s.Duration))
	m.add("seed", plain(strconv.FormatUint(s.Seed, 10)))
	if n := encodeNetwork(s.Network); len(n.Content) > 0 {
		m.add("network", n)
	}
	if len(s.Screen) > 0 {
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		for _, ph := range s.Screen {
			p := mapping()
			p.add("at", dur(ph.At))
			p.add("source", str(ph.Source))
			if r := ph.Region; r != nil {
				rm := mapping()
				rm.Style = yaml.FlowStyle
				rm.add("x", pct(r.X))
				rm.add("y", pct(r.Y))
				rm.add("w", pct(r.W))
				rm.add("h", pct(r.H))
				p.add("region", rm)
			}
			if ph.Complexity != 0 {
				p.add("complexity", pct(ph.Complexity))
			}
			if ph.Rate != 0 {
				p.add("rate", plain(fmtFloat(ph.Rate)))
			}
			seq.Content = append(seq.Content, p.Node)
		}
		m.add("screen", seq)
	}
	if a := encodeAgent(s.Agent); len(a.Content) > 0 {
		m.add("agent", a)
	}
	v := mapping()
	if s.Viewer.Decode != nil {
		v.add("decode", encodeDist(s.Viewer.Decode))
	}
	if s.Viewer.Refresh != 0 {
		v.add("refresh", str(FormatHz(s.Viewer.Refresh)))
	}
	if s.Viewer.Present != 0 {
		v.add("present", dur(s.Viewer.Present))
	}
	if len(v.Content) > 0 {
		m.add("viewer", v.Node)
	}
	c := mapping()
	for _, x := range []struct {
		key string
		c   Clock
	}{{"agent", s.Clocks.Agent}, {"viewer", s.Clocks.Viewer}} {
		if x.c != (Clock{}) {
			cm := mapping()
			cm.add("offset", dur(x.c.Offset))
			cm.add("drift", str(FormatPPM(x.c.DriftPPM)))
			c.add(x.key, cm)
		}
	}
	if len(c.Content) > 0 {
		m.add("clocks", c.Node)
	}
	ctl := mapping()
	if s.Controller.Kind != "" {
		ctl.add("kind", str(s.Controller.Kind))
	}
	if s.Controller.Bitrate != 0 {
		ctl.add("bitrate", str(FormatRate(s.Controller.Bitrate)))
	}
	if len(s.Controller.Steps) > 0 {
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		for _, st := range s.Controller.Steps {
			sm := mapping()
			sm.Style = yaml.FlowStyle
			sm.add("at", dur(st.At))
			sm.add("bitrate", str(FormatRate(st.Bitrate)))
			seq.Content = append(seq.Content, sm.Node)
		}
		ctl.add("steps", seq)
	}
	encodeAdaptive(ctl, s.Controller)
	if len(ctl.Content) > 0 {
		m.add("controller", ctl.Node)
	}
	sw := mapping()
	for i, on := range []bool{s.Switches.OldWaitForFrame, s.Switches.OldCaptureFirst,
		s.Switches.OldShowEveryFrame, s.Switches.OldRestartOnBitrateChange,
		s.Switches.OldABRTotalLatency, s.Switches.OldABRIgnoresUtilisation,
		s.Switches.OldABRSinglePeaks} {
		if on {
			sw.add(objects["switches"][i], boolean(true))
		}
	}
	if len(sw.Content) > 0 {
		m.add("switches", sw.Node)
	}
	if pm := encodePath(s.Path); pm != nil {
		m.add("path", pm)
	}
	if len(s.Expect) > 0 {
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		for _, e := range s.Expect {
			em := mapping()
			em.Style = yaml.FlowStyle
			em.add("measure", str(e.Measure))
			meas, _ := LookupMeasurement(e.Measure)
			if e.Min != nil {
				em.add("min", plain(fmtValue(meas, *e.Min)))
			}
			if e.Max != nil {
				em.add("max", plain(fmtValue(meas, *e.Max)))
			}
			if e.From != 0 {
				em.add("from", dur(e.From))
			}
			if e.To != 0 {
				em.add("to", dur(e.To))
			}
			seq.Content = append(seq.Content, em.Node)
		}
		m.add("expect", seq)
	}
	return m.Node, nil
}

// encodeAdaptive adds an adaptive controller's bounds and the ABR's
// parameters (N10) to m; zero values are the controller's defaults, left
// out.
func encodeAdaptive(m mapNode, c Controller) {
	for _, r := range []struct {
		key string
		bps int64
	}{{"min", c.Min}, {"max", c.Max}} {
		if r.bps != 0 {
			m.add(r.key, str(FormatRate(r.bps)))
		}
	}
	for _, d := range []struct {
		key string
		d   time.Duration
	}{{"window", c.Window}, {"baseline", c.Baseline}, {"threshold", c.Threshold},
		{"sustain", c.Sustain}, {"close", c.Close}, {"hold", c.Hold}} {
		if d.d != 0 {
			m.add(d.key, dur(d.d))
		}
	}
	for _, f := range []struct {
		key string
		f   float64
	}{{"decrease", c.Decrease}, {"increase", c.Increase}, {"guard", c.Guard}} {
		if f.f != 0 {
			m.add(f.key, pct(f.f))
		}
	}
}

func encodeNetwork(n Network) *yaml.Node {
	m := mapping()
	phases := func(list []Phase) *yaml.Node {
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		for _, ph := range list {
			seq.Content = append(seq.Content, encodePhase(ph))
		}
		return seq
	}
	switch {
	case len(n.Up) > 0 && reflect.DeepEqual(n.Up, n.Down):
		m.add("both", phases(n.Down))
	default:
		if len(n.Up) > 0 {
			m.add("up", phases(n.Up))
		}
		if len(n.Down) > 0 {
			m.add("down", phases(n.Down))
		}
	}
	return m.Node
}

func encodePhase(ph Phase) *yaml.Node {
	m := mapping()
	m.add("at", dur(ph.At))
	if ph.Delay != 0 {
		m.add("delay", dur(ph.Delay))
	}
	if j := ph.Jitter; j != nil {
		jm := mapping()
		jm.Style = yaml.FlowStyle
		jm.add("spread", dur(j.Spread))
		if j.Distribution != "" {
			jm.add("distribution", str(j.Distribution))
		}
		if j.Correlation != 0 {
			jm.add("correlation", pct(j.Correlation))
		}
		if j.Reorder {
			jm.add("reorder", boolean(true))
		}
		m.add("jitter", jm)
	}
	if ph.Loss != 0 {
		m.add("loss", pct(ph.Loss))
	}
	if g := ph.Gilbert; g != nil {
		gm := mapping()
		gm.Style = yaml.FlowStyle
		// Zero r and 1-h mean tc's defaults (netem reads them so): leave
		// them out and the loader fills in the same values.
		gm.add("p", pct(g.P))
		if g.R != 0 {
			gm.add("r", pct(g.R))
		}
		if g.OneMinusH != 0 {
			gm.add("1-h", pct(g.OneMinusH))
		}
		if g.OneMinusK != 0 {
			gm.add("1-k", pct(g.OneMinusK))
		}
		m.add("gilbert", gm)
	}
	if ph.Duplicate != 0 {
		m.add("duplicate", pct(ph.Duplicate))
	}
	if ph.Corrupt != 0 {
		m.add("corrupt", pct(ph.Corrupt))
	}
	if ph.Rate != 0 {
		m.add("rate", str(FormatRate(ph.Rate)))
	}
	if ph.Overhead != 0 {
		m.add("overhead", str(FormatBytes(ph.Overhead)))
	}
	if ph.Trace != "" {
		m.add("trace", str(ph.Trace))
	}
	if q := ph.Queue; q != (Queue{}) {
		qm := mapping()
		qm.Style = yaml.FlowStyle
		if q.Bytes != 0 {
			qm.add("bytes", str(FormatBytes(q.Bytes)))
		}
		if q.Packets != 0 {
			qm.add("packets", plain(strconv.Itoa(q.Packets)))
		}
		if q.Delay != 0 {
			qm.add("delay", dur(q.Delay))
		}
		if q.CoDel {
			qm.add("codel", boolean(true))
		}
		m.add("queue", qm)
	}
	if s := ph.Spikes; s != nil {
		sm := mapping()
		sm.Style = yaml.FlowStyle
		sm.add("min", dur(s.Min))
		sm.add("max", dur(s.Max))
		sm.add("every", dur(s.Every))
		sm.add("duration", dur(s.Duration))
		if s.Offset != 0 {
			sm.add("offset", dur(s.Offset))
		}
		if s.Random {
			sm.add("random", boolean(true))
		}
		m.add("spikes", sm)
	}
	if o := ph.Outages; o != nil {
		om := mapping()
		if o.Every != 0 {
			om.add("every", dur(o.Every))
		}
		if o.Duration != 0 {
			om.add("duration", dur(o.Duration))
		}
		if o.Offset != 0 {
			om.add("offset", dur(o.Offset))
		}
		if len(o.Windows) > 0 {
			seq := &yaml.Node{Kind: yaml.SequenceNode}
			for _, w := range o.Windows {
				wm := mapping()
				wm.Style = yaml.FlowStyle
				wm.add("start", dur(w.Start))
				wm.add("duration", dur(w.Duration))
				seq.Content = append(seq.Content, wm.Node)
			}
			om.add("windows", seq)
		}
		if o.Hold {
			om.add("hold", boolean(true))
		}
		m.add("outages", om)
	}
	if ph.BlockUDP {
		m.add("block_udp", boolean(true))
	}
	return m.Node
}

func encodeAgent(a Agent) *yaml.Node {
	m := mapping()
	if a.Encoder != "" {
		m.add("encoder", str(a.Encoder))
	}
	if a.EncodeTime != nil {
		m.add("encode_time", encodeDist(a.EncodeTime))
	}
	for _, l := range []struct {
		key   string
		names []string
	}{{"hardware", a.Hardware}, {"absent", a.Absent}, {"failing", a.Failing}} {
		if len(l.names) > 0 {
			m.add(l.key, strs(l.names))
		}
	}
	if a.Refresh != 0 {
		m.add("refresh", str(FormatHz(a.Refresh)))
	}
	if a.ConvertOnCPU {
		m.add("convert", str("cpu"))
	}
	if a.SendCap != 0 {
		m.add("send_cap", str(FormatBytes(a.SendCap)))
	}
	switch {
	case a.NoRefine:
		m.add("refine", str("off"))
	case a.RefinePasses != 0 || a.RefineEvery != 0:
		r := mapping()
		r.Style = yaml.FlowStyle
		if a.RefinePasses != 0 {
			r.add("passes", plain(strconv.Itoa(a.RefinePasses)))
		}
		if a.RefineEvery != 0 {
			r.add("every", dur(a.RefineEvery))
		}
		m.add("refine", r)
	}
	return m.Node
}

func encodeDist(d *Dist) *yaml.Node {
	switch {
	case d.List != nil:
		seq := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, x := range d.List {
			seq.Content = append(seq.Content, dur(x))
		}
		return seq
	case d.SD == 0 && d.Min == 0 && d.Max == 0:
		return dur(d.Mean)
	}
	m := mapping()
	m.Style = yaml.FlowStyle
	if d.SD != 0 {
		m.add("mean", dur(d.Mean))
		m.add("sd", dur(d.SD))
	}
	if d.Min != 0 || d.Max != 0 {
		m.add("min", dur(d.Min))
		m.add("max", dur(d.Max))
	}
	return m.Node
}

// node builders

type mapNode struct{ *yaml.Node }

func mapping() mapNode { return mapNode{&yaml.Node{Kind: yaml.MappingNode}} }

func (m mapNode) add(key string, v any) {
	var n *yaml.Node
	switch v := v.(type) {
	case *yaml.Node:
		n = v
	case mapNode:
		n = v.Node
	}
	m.Content = append(m.Content, str(key), n)
}

// str is a string scalar; the emitter quotes what would otherwise read as
// another type ("off", "1").
func str(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
}

// plain is a number, written without quotes.
func plain(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: s} }

func boolean(b bool) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(b)}
}

func strs(list []string) *yaml.Node {
	seq := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
	for _, s := range list {
		seq.Content = append(seq.Content, str(s))
	}
	return seq
}

func dur(d time.Duration) *yaml.Node { return str(FormatDuration(d)) }

func pct(f float64) *yaml.Node { return str(FormatPercent(f)) }

// fmtFloat writes a plain number as short as it reads back.
func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// fmtValue writes an expectation's bound in its measurement's unit.
func fmtValue(m Measurement, v float64) string {
	switch m.Unit {
	case UnitDuration:
		if math.Abs(v) < 9e9 { // within time.Duration
			return FormatDuration(time.Duration(math.Round(v * 1e9)))
		}
	case UnitRate:
		if math.Abs(v) < 9e18 && v == math.Trunc(v) {
			return FormatRate(int64(v))
		}
	case UnitFraction:
		return FormatPercent(v)
	}
	return fmtFloat(v)
}

func itoa(i int) string { return strconv.Itoa(i) }

// encodePath writes a path as one word when only the strategy is set, as a
// mapping otherwise, and not at all when it is the default.
func encodePath(p Path) *yaml.Node {
	if p == (Path{Connect: p.Connect}) {
		if p.Connect == "" {
			return nil
		}
		return str(p.Connect)
	}
	pm := mapping()
	if p.Connect != "" {
		pm.add("connect", str(p.Connect))
	}
	if p.AgentNAT != "" {
		pm.add("agent_nat", str(p.AgentNAT))
	}
	if p.ViewerNAT != "" {
		pm.add("viewer_nat", str(p.ViewerNAT))
	}
	if p.SameRouter {
		pm.add("same_router", boolean(true))
	}
	if p.RelayDelay != 0 {
		pm.add("relay_delay", dur(p.RelayDelay))
	}
	if p.IgnoreLANCandidates {
		pm.add("ignore_lan_candidates", boolean(true))
	}
	if p.ForceRelay {
		pm.add("force_relay", boolean(true))
	}
	return pm.Node
}
