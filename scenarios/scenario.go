// Package scenarios owns the lab's scenario format: a YAML file per
// scenario (network timeline per direction, screen timeline, encoder and
// viewer models, clocks, bitrate controller, switches restoring documented
// old behaviour, path, expectations), its strict loader, its JSON Schema and
// the scenario library embedded in the binary.
//
// This file is the format's data model: what a loaded, validated scenario
// holds, in Go units (durations, bits per second, fractions, bytes).
package scenarios

import (
	"cmp"
	"fmt"
	"time"
)

// The types below are the format's single description. A field's yaml tag
// is its key; its other tags say how the loader reads it, and the schema and
// FORMAT.md's key tables are generated or checked from them:
//
//   - format: the unit its text is written in, and flags. Units: duration
//     (the default for a time.Duration, 0 or more), signed (a duration that
//     may be negative), percent (0% to 100%), decrease and increase (the
//     controller's percentages, with their own ranges), rate, size, hz,
//     ppm, count (a plain whole number from 1), changes (a screen source's
//     changes per second) and seed. Flags: required; later (required in
//     every list item but the first); positive (an explicit zero, which
//     the Scenario reads as "left out", is refused); nonempty (an empty
//     string is refused); list (a list only: no single mapping in its
//     place); custom (the type reads the key itself, through keyDecoder).
//   - hint: added to the message refusing a zero, saying what to write
//     instead.
//   - missing: what the "missing required field" message asks for.
//   - expected: what the value should be, for the messages on a value of
//     the wrong shape ({names} stands for the list of names); names: the
//     list of names the value takes (a key of nameLists), for those
//     messages and the schema's enum.
//
// Adding a key is adding a field here with its tags and doc comment, and
// its checks across fields, if any, to validate.go; then regenerate the
// schema (go test ./scenarios -run TestSchemaFile -update).

// Scenario is one loaded, validated scenario.
type Scenario struct {
	// File is where the scenario was loaded from ("library/mobile.yaml").
	File string `yaml:"-"`
	// Name is unique in a library; tests and results are named after it.
	Name string `yaml:"name" format:",required" expected:"a name like lan-animation" missing:"lower-case words joined by '-', like lan-animation"`
	// Description says what the scenario shows, in a sentence or two.
	Description string `yaml:"description" format:",required" expected:"a sentence or two" missing:"a sentence or two saying what the scenario shows"`
	// Findings lists the IDs of FINDINGS.md the scenario reproduces.
	Findings []string `yaml:"findings" expected:"a list of finding IDs like [N3, N20]"`
	// Groups name the go test entry points that run it: "mobile", "lan",
	// "lossy", "pipeline", "encoder", "path", "cellular", "abr",
	// "traffic", "rmcat" (go test ./lab -run Mobile).
	Groups []string `yaml:"groups" expected:"a list of groups like [lan, pipeline]" names:"groups"`
	// Duration is how long the session runs after the handshake.
	Duration time.Duration `yaml:"duration" format:",required,positive" missing:"how long the session runs, like 20s (here or in defaults.yaml)"`
	// Seed seeds every random decision of the run.
	Seed uint64 `yaml:"seed" format:"seed"`
	// Network is the path's impairments per direction.
	Network Network `yaml:"network"`
	// Screen is the agent PC's screen content over time.
	Screen []ScreenPhase `yaml:"screen" expected:"a list of screen phases like [{at: 0s, source: animation}]"`
	// Agent configures the controlled PC.
	Agent Agent `yaml:"agent"`
	// Viewer configures the viewing PC.
	Viewer Viewer `yaml:"viewer"`
	// Clocks offset the two PCs' clocks from true time.
	Clocks Clocks `yaml:"clocks"`
	// Controller is the bitrate controller and its parameters.
	Controller Controller `yaml:"controller"`
	// Switches restore documented old behaviour.
	Switches Switches `yaml:"switches"`
	// Path is how the PCs reach each other: one word, the strategy, or a
	// mapping.
	Path Path `yaml:"path"`
	// ECN makes the session's QUIC connection ECN-capable: classic is
	// quic-go's, ECT(0) on its packets once it has seen its marks come
	// back, and a CE mark taken as a congestion event, as a loss is (RFC
	// 9000 section 13.4, RFC 9002 section 7.1). Left out, the session is
	// not ECN-capable: the path clears the bits, and quic-go stops marking.
	ECN string `yaml:"ecn" expected:"the session's ECN mode: {names}" names:"sessionecns"`
	// Traffic is other traffic on the path: flows that share the
	// session's links (their bottleneck and queue) from their start to
	// their stop.
	Traffic []Flow `yaml:"traffic" format:",list" expected:"a list of flows like [{name: download, kind: tcp-bulk, start: 10s}]"`
	// Expect lists what the run must show: bounds on measurements.
	Expect []Expectation `yaml:"expect,flow" expected:"a list of expectations like [{measure: latency.median, max: 150ms}]"`
}

// Network is a path: Down carries agent -> viewer (the video), Up viewer ->
// agent (reports, acknowledgements). Each is a timeline of phases; a phase
// replaces the whole set of impairments at its instant.
type Network struct {
	// both is one timeline for the two directions, a key of the file
	// only: up or down replaces it for its own direction, so that defaults
	// can set both and a scenario change one direction.
	_ struct{} `yaml:"both" expected:"a phase (a mapping) or a list of phases"`
	// Up is the viewer -> agent timeline.
	Up []Phase `yaml:"up" expected:"a phase (a mapping) or a list of phases"`
	// Down is the agent -> viewer timeline (the video).
	Down []Phase `yaml:"down" expected:"a phase (a mapping) or a list of phases"`
	// UpMTU and DownMTU are each direction's path MTU: the largest IP
	// packet it carries, headers included (a UDP payload counts 28 bytes
	// more over IPv4); 0 is Ethernet's 1500. A tunnel is about 1400,
	// PPPoE 1492. QUIC sets DF and finds the size by probing; below 1308
	// its first packets cannot cross (netem.LinkConfig.MTU).
	UpMTU   int `yaml:"up_mtu" format:"size" hint:" (leave up_mtu out for 1500B)"`
	DownMTU int `yaml:"down_mtu" format:"size" hint:" (leave down_mtu out for 1500B)"`
	// Hops is a path of several hops in place of the one pair of links,
	// in the order the video crosses them (from the agent to the viewer):
	// each hop its own down and up timelines, so that the path has more
	// than one bottleneck and a flow of traffic can cross some hops and
	// not others (Flow.Hops). Given, the network's own up, down, both and
	// MTUs are refused in the same file and ignored from the defaults.
	Hops []Hop `yaml:"hops" format:",list" expected:"a list of hops like [{name: core, down: {rate: 10Mbit/s}}, {name: access, down: {rate: 2Mbit/s}}]"`
}

// Hop is one hop of a path of several: a link per direction, written as
// the network's own are (both, up, down, up_mtu, down_mtu), joined to
// the next hop by a router where other traffic can join or leave.
type Hop struct {
	// Name names the hop in a flow's hops and in the result's per-hop
	// link figures: lower-case words joined by '-', unique in the path.
	Name string `yaml:"name" format:",required" expected:"a name like access" missing:"the hop's name, like access"`
	// both is one timeline for the hop's two directions, as the
	// network's.
	_ struct{} `yaml:"both" expected:"a phase (a mapping) or a list of phases"`
	// Up is the hop's viewer -> agent timeline.
	Up []Phase `yaml:"up" expected:"a phase (a mapping) or a list of phases"`
	// Down is the hop's agent -> viewer timeline (the video).
	Down []Phase `yaml:"down" expected:"a phase (a mapping) or a list of phases"`
	// UpMTU and DownMTU are the hop's MTUs, as the network's.
	UpMTU   int `yaml:"up_mtu" format:"size" hint:" (leave up_mtu out for 1500B)"`
	DownMTU int `yaml:"down_mtu" format:"size" hint:" (leave down_mtu out for 1500B)"`
}

// QUICECN tells whether the flow is a QUIC one (quic-bulk, session,
// reverse-media) made ECN-capable: quic-go's ECN, which only a socket's
// control messages carry (tcp-bulk's is the TCP-like model's own).
func (f Flow) QUICECN() bool { return f.ECN != "" && f.Kind != "tcp-bulk" }

// Flow is one flow of other traffic, sharing the session's links (the
// same up and down links, their bottleneck and their queue) from Start to
// Stop. Kind says what it is and which keys it reads (flowFields): a key
// its kind does not read is an error. Every random choice it makes draws
// from a source seeded by the scenario's seed and the flow's place in the
// list.
type Flow struct {
	// Name names the flow in results, in measurements (flow: NAME) and in
	// captures: lower-case words joined by '-', unique in the scenario,
	// and not main (the scenario's own session).
	Name string `yaml:"name" format:",required" expected:"a name like download" missing:"the flow's name, like download"`
	// Kind is quic-bulk, tcp-bulk, cbr, web, session or reverse-media.
	Kind string `yaml:"kind" format:",required" expected:"a flow kind: {names}" names:"flows" missing:"one of quic-bulk, tcp-bulk, cbr, web, session, reverse-media"`
	// Start is when the flow starts, from the session start.
	Start time.Duration `yaml:"start"`
	// Stop is when it stops, after Start (0: at the session's end).
	Stop time.Duration `yaml:"stop" format:",positive" hint:" (leave stop out for the end of the session)"`
	// Direction is the link a bulk, cbr or web flow's data crosses: down
	// (agent -> viewer, a download at the viewer's end; the default) or
	// up. A session's video goes down, reverse media's up.
	Direction string `yaml:"direction" expected:"a direction: {names}" names:"directions"`
	// Delay is an extra one-way delay on the flow's packets, each way,
	// before they reach the shared links: a flow from further away, whose
	// round trip is longer by twice it.
	Delay time.Duration `yaml:"delay"`
	// Hops are the hops of the network's path the flow crosses (with
	// network.hops only), consecutive and in the path's order: it joins
	// the path at the router before the first and leaves it after the
	// last. Left out, every hop, as the session.
	Hops []string `yaml:"hops" format:",list" expected:"a list of the path's hop names like [access]"`
	// Congestion is the TCP congestion controller of tcp-bulk and web:
	// cubic (the default), reno, or bbr (in the kernel mode only).
	Congestion string `yaml:"congestion" expected:"a TCP congestion controller: {names}" names:"congestions"`
	// ECN makes tcp-bulk's data segments ECN-capable: classic (ECT(0),
	// RFC 3168's response) or l4s (ECT(1), DCTCP's scalable response);
	// and a QUIC flow (quic-bulk, session, reverse-media) ECN-capable as
	// the scenario's ecn does its session (classic only); left out, not
	// ECN-capable.
	ECN string `yaml:"ecn" expected:"an ECN mode: {names}" names:"ecns"`
	// Rate is cbr's bit rate.
	Rate int64 `yaml:"rate" format:"rate" hint:" (a flow of nothing: leave the flow out)" missing:"the bit rate, like 1Mbit/s"`
	// Size is cbr's datagram size, at least 8 B (1200 B when left out).
	Size int `yaml:"size" format:"size,positive" hint:" (leave size out for 1200B)"`
	// Object is web's object size law (3GPP's HTTP main object when left
	// out).
	Object *ObjectSizes `yaml:"object,flow"`
	// Think is web's mean think time between objects (30 s when left
	// out).
	Think time.Duration `yaml:"think" format:",positive" hint:" (leave think out for 30s)"`
	// Controller is a session's bitrate controller, written as the
	// scenario's; the scenario's own when left out.
	Controller *Controller `yaml:"controller,flow"`
	// Screen is a session's screen timeline, written as the scenario's;
	// the scenario's own when left out.
	Screen []ScreenPhase `yaml:"screen" expected:"a list of screen phases like [{at: 0s, source: animation}]"`
}

// ObjectSizes is a web flow's object size law: a lognormal whose mean and
// standard deviation are Mean and SD, truncated to [Min, Max] (a size
// outside is drawn again). Left out, each is that of the main object of
// 3GPP's HTTP traffic model: mean 10710 B, standard deviation 25032 B,
// from 100 B to 2 MB.
type ObjectSizes struct {
	// Mean is the lognormal's mean.
	Mean int `yaml:"mean" format:"size,positive" hint:" (leave mean out for 10710B)"`
	// SD is its standard deviation.
	SD int `yaml:"sd" format:"size,positive" hint:" (leave sd out for 25032B)"`
	// Min is the smallest size drawn.
	Min int `yaml:"min" format:"size,positive" hint:" (leave min out for 100B)"`
	// Max is the largest size drawn.
	Max int `yaml:"max" format:"size,positive" hint:" (leave max out for 2MB)"`
}

// Phase is one step of a direction's timeline. Zero values mean "none".
type Phase struct {
	// At is when the phase starts, from the start of the session.
	At time.Duration `yaml:"at" format:",later" missing:"the instant the phase starts, like 10s (only the first phase may leave it out)"`
	// Delay is the fixed one-way delay.
	Delay time.Duration `yaml:"delay"`
	// Jitter adds random delay.
	Jitter *Jitter `yaml:"jitter,flow"`
	// Loss is independent random loss, a fraction in [0, 1].
	Loss float64 `yaml:"loss" format:"percent"`
	// Gilbert is Gilbert-Elliott loss instead of independent loss.
	Gilbert *Gilbert `yaml:"gilbert,flow"`
	// Duplicate is the fraction of packets duplicated.
	Duplicate float64 `yaml:"duplicate" format:"percent"`
	// Corrupt is the fraction of packets with one bit flipped.
	Corrupt float64 `yaml:"corrupt" format:"percent"`
	// Rate caps the bottleneck in bits per second (0: no cap).
	Rate int64 `yaml:"rate" format:"rate" hint:" (leave rate out, or null, for no cap)"`
	// Overhead is added to each packet's size for the rate cap, in bytes.
	Overhead int `yaml:"overhead" format:"size"`
	// Trace replaces Rate with a recorded capacity: a mahimahi trace,
	// from an offset, wrapping or not. A file writes its path alone, or
	// a mapping (see Trace).
	Trace *Trace `yaml:"trace,flow" expected:"a trace file's path, or shared:NAME, or a mapping like {file: traces/x.down, offset: 120s, loop: false}"`
	// Queue bounds the bottleneck's queue.
	Queue Queue `yaml:"queue,flow"`
	// Spikes adds mobile-style latency spikes.
	Spikes *Spikes `yaml:"spikes,flow"`
	// Outages black the link out.
	Outages *Outages `yaml:"outages"`
	// BlockUDP drops every datagram (for the WebSocket fallback).
	BlockUDP bool `yaml:"block_udp"`
}

// Trace is a link's capacity replayed from a mahimahi trace (one line, one
// 1504-byte delivery opportunity). The trace runs on the session's clock:
// at the session's instant t it is at Offset + t, in whichever phase
// replays it. A file writes the path alone for {file: PATH}: from the
// start, wrapping.
type Trace struct {
	// File is the trace: a path, or shared:NAME for NAME in
	// ../shared/traces/mahimahi beside the repository. In the library's
	// files a path counts from the repository's root
	// (testdata/traces/...), so that an embedded file reads the same as
	// the file on disk; in any other file it counts from the file's own
	// folder, or is absolute. The loader opens and parses every trace it
	// names, and writes a path of the second kind as an absolute one, so
	// that the scenario names the same file wherever it travels.
	File string `yaml:"file" format:",required,nonempty" expected:"a trace file's path, or shared:NAME" missing:"the trace file's path, or shared:NAME"`
	// Offset is the trace's position at the session's start, to replay a
	// segment of a long recording; below the trace's length.
	Offset time.Duration `yaml:"offset"`
	// NoLoop is the trace played once, written loop: false: after its
	// end the link carries nothing, as a recording that ended, instead of
	// wrapping to its start (loop: true, the default).
	NoLoop bool `yaml:"loop" format:",custom" expected:"true or false"`
}

// Jitter is random delay (netem's jitter impairment).
type Jitter struct {
	// Spread is the ± range (uniform) or the standard deviation.
	Spread time.Duration `yaml:"spread" format:",required,positive" hint:" (leave jitter out for none)" missing:"the jitter's range or standard deviation, like 5ms"`
	// Distribution is the law of the delays (uniform when left out).
	Distribution string `yaml:"distribution" expected:"a distribution: {names}" names:"distributions"`
	// Correlation is the correlation of successive delays, 0..1.
	Correlation float64 `yaml:"correlation" format:"percent"`
	// Reorder lets packets overtake each other.
	Reorder bool `yaml:"reorder"`
}

// Gilbert is the Gilbert-Elliott loss model with tc netem's parameters.
// Left out, r is 1-p and 1-h is 100%, as in tc; the Scenario holds the
// values the model runs with. An explicit 0% for r or 1-h is refused:
// netem reads 0 as "left out", and a model that never leaves, or never
// loses in, the bad state is not a loss model.
type Gilbert struct {
	// P is the chance of moving from the good to the bad state at a packet.
	P float64 `yaml:"p" format:"percent,required,positive" hint:" (a link that never enters the bad state loses nothing: leave gilbert out)" missing:"the chance of moving to the bad state at a packet, like 1%"`
	// R is the chance of moving back to the good state.
	R float64 `yaml:"r" format:"percent,positive" hint:" (the link would never leave the bad state)"`
	// OneMinusH is the loss in the bad state.
	OneMinusH float64 `yaml:"1-h" format:"percent,positive" hint:" (the bad state would lose nothing)"`
	// OneMinusK is the loss in the good state.
	OneMinusK float64 `yaml:"1-k" format:"percent"`
}

// Queue bounds a bottleneck's queue; zero fields are unlimited.
type Queue struct {
	// Bytes is the byte limit.
	Bytes int `yaml:"bytes" format:"size,positive" hint:" (a queue of 0 bytes holds nothing; leave bytes out for no limit)"`
	// Packets is the packet limit.
	Packets int `yaml:"packets" format:"count" expected:"a number of packets" hint:" (a queue of 0 packets holds nothing; leave packets out for no limit)"`
	// Delay is the longest a packet may wait in the queue.
	Delay time.Duration `yaml:"delay" format:",positive" hint:" (leave delay out for no limit)"`
	// CoDel manages the queue with CoDel instead of drop-tail.
	CoDel bool `yaml:"codel"`
	// PIE manages the queue with PIE (RFC 8033) instead of drop-tail.
	PIE bool `yaml:"pie"`
	// FQCoDel replaces the FIFO by FQ-CoDel (RFC 8290): per-flow queues
	// served in turn, each under CoDel.
	FQCoDel bool `yaml:"fq_codel"`
	// Cake replaces the FIFO by the CAKE-like queue, FQ-CoDel sharing
	// between hosts first, then between each host's flows; its value is
	// the hosts it shares between, as tc-cake names them.
	Cake string `yaml:"cake" expected:"a host isolation: {names}" names:"cakes"`
	// DualPI2 replaces the FIFO by DualPI2 (RFC 9332, for L4S): an L4S
	// queue and a classic queue under one coupled PI controller.
	DualPI2 bool `yaml:"dualpi2"`
}

// Spikes are extra delays every few seconds (finding N14).
type Spikes struct {
	// Min is the smallest extra delay of a spike.
	Min time.Duration `yaml:"min"`
	// Max is the largest extra delay of a spike.
	Max time.Duration `yaml:"max" format:",required,positive" hint:" (spikes of 0s add nothing: leave spikes out)" missing:"the largest extra delay of a spike, like 600ms"`
	// Every is the interval between spikes.
	Every time.Duration `yaml:"every" format:",required,positive" missing:"the interval between spikes, like 3s"`
	// Duration is how long a spike lasts.
	Duration time.Duration `yaml:"duration" format:",required,positive" missing:"how long a spike lasts, like 200ms"`
	// Offset is the first spike's instant.
	Offset time.Duration `yaml:"offset"`
	// Random makes the intervals random with mean Every.
	Random bool `yaml:"random"`
}

// Outages are blackout windows: periodic, or listed.
type Outages struct {
	// Every is the interval between periodic outages.
	Every time.Duration `yaml:"every" format:",positive" missing:"the interval between outages, like 10s, or windows"`
	// Duration is how long a periodic outage lasts.
	Duration time.Duration `yaml:"duration" format:",positive" missing:"how long an outage lasts, like 500ms"`
	// Offset is the first periodic outage's instant.
	Offset time.Duration `yaml:"offset"`
	// Windows lists the outages instead of a period.
	Windows []Window `yaml:"windows,flow" format:",list" expected:"a list of windows like [{start: 10s, duration: 2s}]"`
	// Hold holds packets and releases them at the end, instead of losing
	// them.
	Hold bool `yaml:"hold"`
}

// Window is one blackout.
type Window struct {
	// Start is when the outage starts.
	Start time.Duration `yaml:"start" format:",required" missing:"when the outage starts, like 10s"`
	// Duration is how long it lasts.
	Duration time.Duration `yaml:"duration" format:",required,positive" missing:"how long the outage lasts, like 2s"`
}

// ScreenPhase is one step of the screen's timeline.
type ScreenPhase struct {
	// At is when the source takes over.
	At time.Duration `yaml:"at" format:",later" missing:"the instant the phase starts, like 10s (only the first phase may leave it out)"`
	// Source is animation, still, typing, scrolling, video, photo or
	// recording.
	Source string `yaml:"source" format:",required" expected:"a source: {names}" names:"sources" missing:"one of animation, still, typing, scrolling, video, photo, recording"`
	// Region is the part of the screen a video, photo or scroll covers, as
	// fractions of the screen (0: the source's default).
	Region *Region `yaml:"region,flow"`
	// Complexity (0..1) overrides the source's detail where it has one.
	Complexity float64 `yaml:"complexity" format:"percent,positive" hint:" (leave complexity out for the source's own)"`
	// Rate is the animation's or scrolling's change rate, or the video's
	// frames per second (0: the source's default).
	Rate float64 `yaml:"rate" format:"changes"`
	// File is a recording's file (agent/screen/recording, a .labrec),
	// required by and only for the recording source. Its path counts as a
	// trace's (Trace.File: from the repository's root in the library's
	// files, from the file's own folder in any other, or absolute), but
	// there is no shared: form. The loader opens its index, and writes a
	// path of the second kind as an absolute one.
	File string `yaml:"file" format:",nonempty" expected:"a recording's path, like ../testdata/recordings/typing.labrec" missing:"the recording's path, like ../testdata/recordings/typing.labrec"`
	// Offset is where in the recording the phase starts, from its first
	// frame; below the recording's length.
	Offset time.Duration `yaml:"offset"`
	// NoLoop is the recording played once, written loop: false: after its
	// last frame the screen keeps it, instead of playing the recording
	// again from its first frame (loop: true, the default).
	NoLoop bool `yaml:"loop" format:",custom" expected:"true or false"`
}

// Region is a rectangle in fractions of the screen.
type Region struct {
	// X is the left edge.
	X float64 `yaml:"x" format:"percent,required" missing:"the left edge as a percentage of the screen's width, like 10%"`
	// Y is the top edge.
	Y float64 `yaml:"y" format:"percent,required" missing:"the top edge as a percentage of the screen's height, like 10%"`
	// W is the width.
	W float64 `yaml:"w" format:"percent,required,positive" missing:"the width as a percentage of the screen's width, like 50%"`
	// H is the height.
	H float64 `yaml:"h" format:"percent,required,positive" missing:"the height as a percentage of the screen's height, like 50%"`
}

// Agent configures the controlled PC.
type Agent struct {
	// Encoder is the software encoder's preset (default openh264-asm).
	Encoder string `yaml:"encoder" expected:"a software encoder preset: {names}" names:"encoders"`
	// EncodeTime overrides the preset's encode time.
	EncodeTime *Dist `yaml:"encode_time,flow"`
	// FrameSizes is how the H.264 model sizes frames: "calibrated" (the
	// default), the preset's own sizes, which for the OpenH264 presets are
	// fitted to the real encoder; or "budget", every frame of new content
	// spending its share of the target, a constant-bitrate rate control
	// (the library's choice: its findings were measured on hardware
	// encoders).
	FrameSizes string `yaml:"frame_sizes" expected:"frame sizes: {names}" names:"framesizes"`
	// Hardware lists hardware encoder presets to probe first (N5).
	Hardware []string `yaml:"hardware" expected:"a list of hardware presets like [quicksync, nvenc]" names:"hardware"`
	// Absent names those of Hardware that are missing.
	Absent []string `yaml:"absent" expected:"a list of hardware presets like [quicksync]" names:"hardware"`
	// Failing names those of Hardware that fail to open.
	Failing []string `yaml:"failing" expected:"a list of hardware presets like [nvenc]" names:"hardware"`
	// Refresh is the display refresh in Hz (default 60).
	Refresh float64 `yaml:"refresh" format:"hz" hint:" (leave refresh out for 60Hz)"`
	// ConvertOnCPU converts colours on the processor (N4): convert: cpu
	// (gpu is the default).
	ConvertOnCPU bool `yaml:"convert" format:",custom" expected:"gpu or cpu"`
	// SendCap bounds bytes sent and unacknowledged (N8; default 256 KB).
	SendCap int `yaml:"send_cap" format:"size,positive" hint:" (nothing could be sent; leave send_cap out for 256KB)"`
	// RefinePasses and RefineEvery shape still-image refinement (N15);
	// NoRefine turns it off. A file writes them as refine: {passes,
	// every}, or refine: off (see refine).
	RefinePasses int           `yaml:"-"`
	RefineEvery  time.Duration `yaml:"-"`
	NoRefine     bool          `yaml:"refine,flow" format:",custom"`
}

// refine is agent.refine's mapping form; Agent holds its fields flat.
type refine struct {
	// Passes is how many refinement passes follow a still image.
	Passes int `yaml:"passes" format:"count" expected:"a number of passes" hint:" (write refine: off for none)"`
	// Every is the interval between two passes.
	Every time.Duration `yaml:"every" format:",positive"`
}

// Dist is a duration distribution: a constant, normal(mean, sd),
// uniform(min, max) or a list (see Dist's decoder).
type Dist struct {
	// Mean is the normal's mean, or the constant.
	Mean time.Duration `yaml:"mean"`
	// SD is the normal's standard deviation.
	SD time.Duration `yaml:"sd" format:",positive" hint:" (leave sd out for a constant)"`
	// Min is the uniform's low end, or the normal's lower clamp.
	Min time.Duration `yaml:"min"`
	// Max is the uniform's high end, or the normal's upper clamp.
	Max time.Duration `yaml:"max"`
	// List is replayed in order and cycled.
	List []time.Duration `yaml:"-"`
}

// Viewer configures the viewing PC.
type Viewer struct {
	// Decode is the decode time (default 3 ms).
	Decode *Dist `yaml:"decode,flow"`
	// Refresh is the display refresh in Hz (0: present when decoded).
	Refresh float64 `yaml:"refresh" format:"hz" hint:" (leave refresh out to present frames as soon as they are decoded)"`
	// Present is how long a present takes.
	Present time.Duration `yaml:"present"`
	// Policy is what the viewer does with a frame that arrives after a
	// newer one and how it repairs a broken reference chain: drop (the
	// default), wait, keyframe or refresh (docs/policies.md).
	Policy string `yaml:"policy" expected:"a viewer policy: {names}" names:"policies"`
}

// Clocks offset the two PCs' clocks from true time (N1).
type Clocks struct {
	// Agent is the agent PC's clock error.
	Agent Clock `yaml:"agent"`
	// Viewer is the viewer PC's clock error.
	Viewer Clock `yaml:"viewer"`
}

// Clock is one PC's clock error.
type Clock struct {
	// Offset is the clock's offset from true time; it may be negative.
	Offset time.Duration `yaml:"offset" format:"signed"`
	// DriftPPM is how fast it drifts, in parts per million.
	DriftPPM float64 `yaml:"drift" format:"ppm"`
}

// Controller is the bitrate controller and its parameters. Zero values mean
// the controller's defaults (for the ABR, those of finding N10).
type Controller struct {
	// Kind is "fixed", "steps", "abr" (NuviraHub's adaptive bitrate, N10)
	// or "gcc" (Google Congestion Control, both halves of its draft).
	Kind string `yaml:"kind" expected:"a controller kind: {names}" names:"kinds"`
	// Bitrate is the fixed bitrate, or the initial one, in bits/s.
	Bitrate int64 `yaml:"bitrate" format:"rate,custom"`
	// Steps change the bitrate at given instants.
	Steps []Step `yaml:"steps,flow" expected:"a list of steps like [{at: 5s, bitrate: 3.2Mbit/s}]" missing:"a list of steps like [{at: 5s, bitrate: 3.2Mbit/s}]"`
	// Min and Max bound an adaptive controller's bitrate, in bits/s.
	Min int64 `yaml:"min" format:"rate" hint:" (leave min out for the controller's default)"`
	Max int64 `yaml:"max" format:"rate" hint:" (leave max out for the controller's default)"`
	// The ABR's rule (N10): when the median latency over Window exceeds
	// the minimum over Baseline by more than Threshold, sustained for
	// Sustain, the bitrate falls by Decrease; when it stays within Close of
	// it, it rises by Increase; Hold is the pause after each change; Guard
	// is the share of the target the video must use for a change (N13).
	Window    time.Duration `yaml:"window" format:",positive" hint:" (leave window out for the controller's default)"`
	Baseline  time.Duration `yaml:"baseline" format:",positive" hint:" (leave baseline out for the controller's default)"`
	Threshold time.Duration `yaml:"threshold" format:",positive" hint:" (leave threshold out for the controller's default)"`
	Sustain   time.Duration `yaml:"sustain" format:",positive" hint:" (leave sustain out for the controller's default)"`
	Close     time.Duration `yaml:"close" format:",positive" hint:" (leave close out for the controller's default)"`
	Hold      time.Duration `yaml:"hold" format:",positive" hint:" (leave hold out for the controller's default)"`
	Decrease  float64       `yaml:"decrease" format:"decrease" hint:" (leave decrease out for the controller's default)"`
	Increase  float64       `yaml:"increase" format:"increase" hint:" (leave increase out for the controller's default)"`
	Guard     float64       `yaml:"guard" format:"percent,positive" hint:" (for no guard, write switches: {old_abr_ignores_utilisation: true}; leave guard out for the controller's default)"`
}

// Step is one scripted bitrate change.
type Step struct {
	// At is the instant of the change.
	At time.Duration `yaml:"at" format:",required" missing:"the instant of the change, like 5s"`
	// Bitrate is the new bitrate.
	Bitrate int64 `yaml:"bitrate" format:"rate,required" missing:"the new bitrate, like 3.2Mbit/s"`
}

// Switches restore documented old behaviour; all off is the fixed product.
type Switches struct {
	OldWaitForFrame           bool `yaml:"old_wait_for_frame"`            // N6
	OldCaptureFirst           bool `yaml:"old_capture_first"`             // N7
	OldShowEveryFrame         bool `yaml:"old_show_every_frame"`          // N8
	OldRestartOnBitrateChange bool `yaml:"old_restart_on_bitrate_change"` // N16
	// The ABR's documented mistakes: judging total latency instead of its
	// network part (N12), changing the bitrate whatever share of it the
	// video uses (N13), reacting to single peaks instead of a queue that
	// lasts a whole second (N14).
	OldABRTotalLatency       bool `yaml:"old_abr_total_latency"`
	OldABRIgnoresUtilisation bool `yaml:"old_abr_ignores_utilisation"`
	OldABRSinglePeaks        bool `yaml:"old_abr_single_peaks"`
}

// Expectation bounds a named measurement over a time window. A few
// measurements read a figure of their own from a key beside measure
// (latency, at or every; see MeasurementKeys).
type Expectation struct {
	// Measure names the measurement (see Measurements).
	Measure string `yaml:"measure" format:",required" expected:"a measurement name like latency.median" names:"measurements" missing:"a measurement name, like latency.median"`
	// Latency is the latency bound of recovery.under and
	// latency.time-above.
	Latency time.Duration `yaml:"latency" format:",positive" missing:"the latency bound, like 150ms"`
	// At is the instant of bitrate.target and bitrate.sent, from the
	// session start.
	At time.Duration `yaml:"at" format:",positive" hint:" (at 0s nothing was sent yet, and the target is controller.bitrate)" missing:"the instant, like 10s"`
	// Every is the averaging period of bitrate.capacity-correlation.
	Every time.Duration `yaml:"every" format:",positive" missing:"the averaging period, like 1s"`
	// Flow names the flow of the flow measurements: a flow of traffic,
	// or main for the scenario's own session.
	Flow string `yaml:"flow" format:",nonempty" expected:"a flow's name, or main" missing:"the flow's name (a name in traffic, or main for the scenario's own session)"`
	// Min and Max bound the value (nil: no bound), in the measurement's
	// unit: seconds for durations, bits/s for rates, a count or a fraction.
	Min *float64 `yaml:"min" format:",custom"`
	Max *float64 `yaml:"max" format:",custom"`
	// From and To bound the window from the session start; To 0 is the end.
	From time.Duration `yaml:"from"`
	To   time.Duration `yaml:"to" format:",custom"`
	// ExpectedFailure marks a bound the product is known to miss today,
	// saying why: a criterion it should meet (a standard's, a finding's)
	// kept at its figure rather than loosened to what the product does.
	// The verdict inverts: the check passes while the bound is missed,
	// reported as an expected failure, and fails once the bound is met,
	// so that a change in either direction shows.
	ExpectedFailure string `yaml:"expected_failure" format:",nonempty" expected:"a sentence saying why the product misses the bound today"`
	// Band marks bounds set from the measured spread of this scenario's
	// own runs (make bounds, docs/testing.md): they guard against change,
	// not for quality, so a value outside them says the session changed,
	// in either direction, rather than that it got worse.
	Band bool `yaml:"band" expected:"true or false"`
	// Required says what requires the bound: a finding's figure, a
	// standard's criterion. A bound that is not a band is a requirement
	// (Requirement); Required names where it comes from, for the report
	// of a failure.
	Required string `yaml:"required" format:",nonempty" expected:"a sentence saying what requires the bound"`
	// Line is the expectation's line in File, for reports.
	Line int `yaml:"-"`
}

// Path is how the two PCs reach each other (N17-N19, E14). Its zero value,
// like `path: direct`, is the plain set-up: the two PCs joined by the
// network's links alone, no routers, no broker, no relay. Anything else
// builds the two-site topology (each PC on its own LAN, behind a router
// when it has a NAT, a broker and a relay on the internet) and puts the
// scenario's network on the viewer's access links, whichever path the
// packets take.
type Path struct {
	// Connect is the strategy: "direct" (hole punching only), "auto"
	// (direct, then the relay, then the WebSocket tunnel), or "relay" or
	// "websocket" to force that step.
	Connect string `yaml:"connect" expected:"a strategy: {names}" names:"paths"`
	// AgentNAT and ViewerNAT are each PC's router: "none" (a public
	// address) or a NAT preset (NATs).
	AgentNAT  string `yaml:"agent_nat" expected:"a router: {names}" names:"nats"`
	ViewerNAT string `yaml:"viewer_nat" expected:"a router: {names}" names:"nats"`
	// SameRouter puts both PCs on one LAN behind the agent's router.
	SameRouter bool `yaml:"same_router"`
	// RelayDelay is the one-way delay of each leg between a site and the
	// relay.
	RelayDelay time.Duration `yaml:"relay_delay"`
	// IgnoreLANCandidates and ForceRelay are EvertyDesk's debug switches
	// (E14): never try the PCs' LAN addresses; go through the relay.
	IgnoreLANCandidates bool `yaml:"ignore_lan_candidates"`
	ForceRelay          bool `yaml:"force_relay"`
}

// Plain reports whether the path is the plain link between the PCs (no
// topology).
func (p Path) Plain() bool {
	return (p.Connect == "" || p.Connect == PathDirect) && (p.AgentNAT == "" || p.AgentNAT == "none") &&
		(p.ViewerNAT == "" || p.ViewerNAT == "none") && !p.SameRouter && p.RelayDelay == 0 &&
		!p.IgnoreLANCandidates && !p.ForceRelay
}

// ABRDuration is the ABR parameter a scenario names key (threshold,
// window, baseline, sustain, close, hold) as a field of c, or nil for
// another key: the one map from the format's names to the fields, for
// tools that set parameters by name (compare's settings, the sweep).
func (c *Controller) ABRDuration(key string) *time.Duration {
	switch key {
	case "threshold":
		return &c.Threshold
	case "window":
		return &c.Window
	case "baseline":
		return &c.Baseline
	case "sustain":
		return &c.Sustain
	case "close":
		return &c.Close
	case "hold":
		return &c.Hold
	}
	return nil
}

// ABRShare is ABRDuration for the parameters that are fractions
// (decrease, increase, guard).
func (c *Controller) ABRShare(key string) *float64 {
	switch key {
	case "decrease":
		return &c.Decrease
	case "increase":
		return &c.Increase
	case "guard":
		return &c.Guard
	}
	return nil
}

// Adaptive reports whether the controller adapts its bitrate to the path
// (abr or gcc), rather than following a fixed bitrate or a script.
func (c Controller) Adaptive() bool { return c.Kind == "abr" || c.Kind == "gcc" }

// As returns the controller as another adaptive kind (abr or gcc) with the
// same initial bitrate and bounds, the keys both kinds read, and the new
// kind's own defaults for the rest: the same session under the other
// controller, as compare's controller setting and the RFC 8867 suite's
// second pass run it. Only an adaptive controller can be swapped.
func (c Controller) As(kind string) (Controller, error) {
	switch {
	case kind != "abr" && kind != "gcc":
		return Controller{}, fmt.Errorf("unknown adaptive controller %q: expected abr or gcc", kind)
	case !c.Adaptive():
		k := cmp.Or(c.Kind, "fixed")
		return Controller{}, fmt.Errorf("a %s controller has no adaptive bitrate to hand to %s: expected a scenario with controller kind abr or gcc", k, kind)
	case c.Kind == kind:
		return c, nil
	}
	return Controller{Kind: kind, Bitrate: c.Bitrate, Min: c.Min, Max: c.Max}, nil
}
