package scenarios

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/nuvirahub/latencylab/netem"
)

// The names a scenario may use. They live here, beside the loader that
// refuses every other, and the schema test checks that
// scenario.schema.json lists the same.

// Groups are the go test entry points that run a scenario
// (go test ./lab -run Mobile runs the group "mobile"; rmcat is RFC 8867's
// test cases, go test ./lab -run RMCAT; real is the real-encoder twins of
// lab/testdata/real, go test ./lab -run Real, kept out of the library
// because they need OpenH264).
var Groups = []string{"mobile", "lan", "lossy", "pipeline", "encoder", "path", "cellular", "abr", "traffic", "rmcat", "real"}

// Sources are the screen content models of agent/screen.
// A recording replays a recorded desktop (agent/screen/recording).
var Sources = []string{"animation", "still", "typing", "scrolling", "video", "photo", "recording"}

// JitterDistributions are the laws netem's jitter draws delays from.
var JitterDistributions = []string{"uniform", "normal", "pareto-normal", "truncated-normal"}

// CakeModes are the host isolations of the CAKE-like queue (queue.cake),
// tc-cake's names: share between source and destination hosts at once
// (CAKE's default), between source hosts (a router's egress, the LAN's
// hosts sending), or between destination hosts (its ingress), then
// between each host's flows. They are netem's, whose order the modes'
// numbers follow.
var CakeModes = netem.CakeModes

// ControllerKinds are the bitrate controllers a scenario can ask for:
// a fixed bitrate, scripted steps, NuviraHub's adaptive bitrate (N10) and
// Google Congestion Control (draft-ietf-rmcat-gcc-02: its delay-based and
// loss-based halves).
var ControllerKinds = []string{"fixed", "steps", "abr", "gcc"}

// Paths are the connection strategies of path.connect (or of path written
// as one word): direct, hole punching alone; auto, direct then the relay
// then the WebSocket tunnel; relay and websocket force that step.
var Paths = []string{"direct", "auto", "relay", "websocket"}

// FlowKinds are the kinds of competing traffic (traffic[].kind): a bulk
// QUIC flow, a bulk TCP-like flow, constant-bitrate datagrams, web-like
// on/off fetches, a second remote-desktop session and media in the
// reverse direction.
var FlowKinds = []string{"quic-bulk", "tcp-bulk", "cbr", "web", "session", "reverse-media"}

// FrameSizes are how the H.264 model may size frames (agent.frame_sizes):
// calibrated, the preset's own sizes (fitted to OpenH264 for its
// presets), or budget, every frame of new content at its share of the
// target.
var FrameSizes = []string{"calibrated", "budget"}

// ViewerPolicies are what the viewer may do with a frame that arrives
// after a newer one (viewer.policy): drop it and show the damaged pictures
// after it until a keyframe (the default), wait for it, ask for a keyframe
// at once and hold the last whole picture, or repair with a rolling intra
// refresh.
var ViewerPolicies = []string{"drop", "wait", "keyframe", "refresh"}

// Directions are the links a flow's data can cross: down (agent ->
// viewer) and up.
var Directions = []string{"down", "up"}

// Congestions are the TCP congestion controllers of tcp-bulk and web
// flows: the virtual-time model has cubic and reno, the kernel mode
// bbr too.
var Congestions = []string{"cubic", "reno", "bbr"}

// ECNs are the ECN modes of tcp-bulk flows (the TCP-like model's, in
// virtual time).
var ECNs = []string{"classic", "l4s"}

// SessionECNs are the ECN modes of the session's QUIC connection: quic-go
// has the classic response only (no scalable one, for L4S).
var SessionECNs = []string{"classic"}

// MainFlow is the name of the scenario's own session among the flows of
// the flow measurements.
const MainFlow = "main"

// PathDirect is the strategy a scenario without path gets.
const PathDirect = "direct"

// NATs are the routers a PC can sit behind: none (a public address) and the
// classic presets of netem/nat, named by their RFC 4787 behaviours in
// FORMAT.md.
var NATs = []string{"none", "full-cone", "restricted-cone", "port-restricted-cone", "symmetric"}

// later are names that are planned but not built yet: a scenario naming one
// gets an error that says where it comes from rather than "unknown".
var later = map[string]map[string]string{}

// findingID matches the IDs of ../shared/FINDINGS.md: N1-N20 (the network
// and pipeline write-up) and E1-E14 (the codec experiments).
var findingID = regexp.MustCompile(`^(N([1-9]|1[0-9]|20)|E([1-9]|1[0-4]))$`)

// FindingIDs lists every finding ID a scenario may name, in order.
func FindingIDs() []string {
	var ids []string
	for i := 1; i <= 20; i++ {
		ids = append(ids, "N"+strconv.Itoa(i))
	}
	for i := 1; i <= 14; i++ {
		ids = append(ids, "E"+strconv.Itoa(i))
	}
	return ids
}

// namePattern is what a scenario name looks like: lower-case words (letters
// and digits) joined by '-', so that it is a file name, a subtest name and a
// result file name without quoting.
var namePattern = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// EncoderPreset is an encoder a scenario may name. A scenario names its
// encoders by string; the lab resolves the names to encoders, and tells the
// loader which exist (SetEncoders) so that it refuses the others with a
// line, without the scenario format depending on the encoders and their
// codecs.
type EncoderPreset struct {
	Name string
	// Hardware marks a GPU encoder's model: listed under hardware, never
	// the encoder.
	Hardware bool
	// Lossless marks a real lossless codec, whose encode time and bitrate
	// are not the scenario's to set.
	Lossless bool
	// Real marks an encoder whose frames are real bytes (a real codec:
	// OpenH264, a lossless one), not the H.264 model's sizes: frame_sizes
	// does not apply to it.
	Real bool
	// Missing, when not empty, says why this build cannot run the preset
	// (a real encoder whose library or cgo is absent): a scenario naming
	// it is refused with this reason.
	Missing string
}

var encoders struct {
	sync.RWMutex
	presets []EncoderPreset
}

// SetEncoders tells the loader the encoder presets that exist; the lab
// calls it when it is linked. Until then the loader leaves encoder names
// unchecked, and the lab refuses an unknown one when it resolves it.
func SetEncoders(presets []EncoderPreset) {
	encoders.Lock()
	defer encoders.Unlock()
	encoders.presets = slices.SortedFunc(slices.Values(presets), func(a, b EncoderPreset) int {
		return strings.Compare(a.Name, b.Name) // messages list them in order
	})
}

// encodersKnown tells whether SetEncoders was called.
func encodersKnown() bool {
	encoders.RLock()
	defer encoders.RUnlock()
	return encoders.presets != nil
}

// SoftwarePresets and HardwarePresets split the encoder presets: the
// agent's `encoder` is the software fallback, `hardware` lists what it
// probes first (N5).
func SoftwarePresets() []string { return presetsWhere(false) }

// HardwarePresets lists the presets that model a GPU encoder.
func HardwarePresets() []string { return presetsWhere(true) }

// presetOf returns a preset the lab told the loader of (SetEncoders).
func presetOf(name string) (EncoderPreset, bool) {
	encoders.RLock()
	defer encoders.RUnlock()
	i := slices.IndexFunc(encoders.presets, func(p EncoderPreset) bool { return p.Name == name })
	if i < 0 {
		return EncoderPreset{}, false
	}
	return encoders.presets[i], true
}

// isLossless tells whether a software preset is one of the real lossless
// codecs, whose encode time and bitrate are not the scenario's to set.
func isLossless(preset string) bool {
	p, _ := presetOf(preset)
	return p.Lossless
}

// IsRealPreset tells whether a software preset makes real bytes
// (EncoderPreset.Real), so that agent.frame_sizes does not apply to it.
func IsRealPreset(preset string) bool {
	p, _ := presetOf(preset)
	return p.Real
}

// presetMissing says why this build cannot run a preset, "" when it can.
func presetMissing(preset string) string {
	p, _ := presetOf(preset)
	return p.Missing
}

func presetsWhere(hardware bool) []string {
	encoders.RLock()
	defer encoders.RUnlock()
	var out []string
	for _, p := range encoders.presets {
		if p.Hardware == hardware {
			out = append(out, p.Name)
		}
	}
	return out
}

// sourceFields says which optional fields each screen source has: a
// full-screen animation has no region, a still image has nothing to tune.
// A field a source ignores is an error rather than silently unused.
var sourceFields = map[string][]string{
	"animation": {"rate", "complexity"},
	"still":     {},
	"typing":    {"complexity"},
	"scrolling": {"rate", "region", "complexity"},
	"video":     {"rate", "region", "complexity"},
	"photo":     {"region", "complexity"},
	"recording": {"file", "offset", "loop"},
}

// kindFields says which controller keys (besides kind) each controller
// kind reads: the bounds are an adaptive controller's, the rule's
// parameters the ABR's (N10). A key the kind ignores is an error rather
// than silently unused.
var kindFields = map[string][]string{
	"fixed": {"bitrate"},
	"steps": {"bitrate", "steps"},
	"abr": {"bitrate", "min", "max", "window", "baseline", "threshold", "sustain", "close", "hold",
		"decrease", "increase", "guard"},
	"gcc": {"bitrate", "min", "max"},
}

// flowFields says which keys (besides name, kind, start and stop) each
// kind of flow reads: a key the kind ignores is an error rather than
// silently unused. A session's video goes down and reverse media's up,
// so neither has a direction.
var flowFields = map[string][]string{
	"quic-bulk":     {"direction", "delay", "hops", "ecn"},
	"tcp-bulk":      {"direction", "delay", "hops", "congestion", "ecn"},
	"cbr":           {"direction", "delay", "hops", "rate", "size"},
	"web":           {"direction", "delay", "hops", "congestion", "object", "think"},
	"session":       {"delay", "hops", "controller", "screen", "ecn"},
	"reverse-media": {"delay", "hops", "controller", "screen", "ecn"},
}

// flowKindsWith lists the flow kinds that read key, for error messages.
func flowKindsWith(key string) []string {
	var out []string
	for _, k := range FlowKinds {
		if slices.Contains(flowFields[k], key) {
			out = append(out, k)
		}
	}
	return out
}

// IsMediaFlow tells whether a flow kind is a remote-desktop session
// (session, reverse-media), whose latency the flow measurements take.
func IsMediaFlow(kind string) bool { return kind == "session" || kind == "reverse-media" }

// kindsWith lists the controller kinds that read field, for error messages.
func kindsWith(field string) []string {
	var out []string
	for _, k := range ControllerKinds {
		if slices.Contains(kindFields[k], field) {
			out = append(out, k)
		}
	}
	return out
}

// abrSwitches are the switches that restore the ABR's documented mistakes
// (N12, N13, N14): they apply to controller kind abr only.
var abrSwitches = []string{"old_abr_total_latency", "old_abr_ignores_utilisation", "old_abr_single_peaks"}

// sourcesWith lists the sources that have field, for error messages.
func sourcesWith(field string) []string {
	var out []string
	for _, s := range Sources {
		if slices.Contains(sourceFields[s], field) {
			out = append(out, s)
		}
	}
	return out
}

// checkName says what is wrong with a name from a list of known ones, with
// a suggestion when one is close. what is "source", "group", ...
func checkName(value, what, field string, known []string) string {
	if slices.Contains(known, value) {
		return ""
	}
	if why, ok := later[field][value]; ok {
		return fmt.Sprintf("%s %s is not available yet: it comes with %s; expected one of %s", what, value, why, list(known))
	}
	msg := fmt.Sprintf("unknown %s %q:", what, value)
	if s := closest(value, known); s != "" {
		msg += " did you mean " + s + "?"
	}
	return msg + " expected one of " + list(known)
}
