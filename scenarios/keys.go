package scenarios

// objects lists every mapping of the format and the keys it allows, in the
// order FORMAT.md gives them. It is the loader's only list of keys: the
// decoder asks for keys through it (asking for one that is not here is a
// programming error and panics in tests), unknown keys are reported against
// it, and the schema test checks that scenario.schema.json's $defs of the
// same names have exactly these properties.
var objects = map[string][]string{
	"scenario": {"name", "description", "findings", "groups", "duration", "seed", "network", "screen",
		"agent", "viewer", "clocks", "controller", "switches", "path", "expect"},
	"network": {"both", "up", "down"},
	"phase": {"at", "delay", "jitter", "loss", "gilbert", "duplicate", "corrupt", "rate", "overhead",
		"trace", "queue", "spikes", "outages", "block_udp"},
	"jitter":       {"spread", "distribution", "correlation", "reorder"},
	"gilbert":      {"p", "r", "1-h", "1-k"},
	"queue":        {"bytes", "packets", "delay", "codel"},
	"spikes":       {"min", "max", "every", "duration", "offset", "random"},
	"outages":      {"every", "duration", "offset", "windows", "hold"},
	"window":       {"start", "duration"},
	"screen_phase": {"at", "source", "region", "complexity", "rate"},
	"region":       {"x", "y", "w", "h"},
	"agent": {"encoder", "encode_time", "hardware", "absent", "failing", "refresh", "convert",
		"send_cap", "refine"},
	"refine":      {"passes", "every"},
	"dist_object": {"mean", "sd", "min", "max"},
	"viewer":      {"decode", "refresh", "present"},
	"clocks":      {"agent", "viewer"},
	"clock":       {"offset", "drift"},
	"controller": {"kind", "bitrate", "steps", "min", "max", "window", "baseline", "threshold", "sustain",
		"close", "hold", "decrease", "increase", "guard"},
	"step": {"at", "bitrate"},
	"switches": {"old_wait_for_frame", "old_capture_first", "old_show_every_frame",
		"old_restart_on_bitrate_change", "old_abr_total_latency", "old_abr_ignores_utilisation",
		"old_abr_single_peaks"},
	"expectation": {"measure", "min", "max", "from", "to"},
	"path": {"connect", "agent_nat", "viewer_nat", "same_router", "relay_delay",
		"ignore_lan_candidates", "force_relay"},
}

// required lists the keys a mapping must have (after the defaults are
// merged in). Keys whose zero value is a real value (a region's x, a
// window's start) can only be checked here, on the file; the others are
// also checked on the Scenario by Validate.
var required = map[string][]string{
	"scenario":     {"name", "description", "duration"},
	"jitter":       {"spread"},
	"gilbert":      {"p"},
	"spikes":       {"max", "every", "duration"},
	"window":       {"start", "duration"},
	"screen_phase": {"source"},
	"region":       {"x", "y", "w", "h"},
	"step":         {"at", "bitrate"},
	"expectation":  {"measure"},
}

// hints say what a missing required field should hold, for the "missing
// required field" message. Keyed by object and key.
var hints = map[string]string{
	"scenario.name":        "lower-case words joined by '-', like lan-animation",
	"scenario.description": "a sentence or two saying what the scenario shows",
	"scenario.duration":    "how long the session runs, like 20s (here or in defaults.yaml)",
	"phase.at":             "the instant the phase starts, like 10s (only the first phase may leave it out)",
	"jitter.spread":        "the jitter's range or standard deviation, like 5ms",
	"gilbert.p":            "the chance of moving to the bad state at a packet, like 1%",
	"spikes.max":           "the largest extra delay of a spike, like 600ms",
	"spikes.every":         "the interval between spikes, like 3s",
	"spikes.duration":      "how long a spike lasts, like 200ms",
	"outages.every":        "the interval between outages, like 10s, or windows",
	"outages.duration":     "how long an outage lasts, like 500ms",
	"window.start":         "when the outage starts, like 10s",
	"window.duration":      "how long the outage lasts, like 2s",
	"screen_phase.source":  "one of " + list(Sources),
	"region.x":             "the left edge as a percentage of the screen's width, like 10%",
	"region.y":             "the top edge as a percentage of the screen's height, like 10%",
	"region.w":             "the width as a percentage of the screen's width, like 50%",
	"region.h":             "the height as a percentage of the screen's height, like 50%",
	"step.at":              "the instant of the change, like 5s",
	"step.bitrate":         "the new bitrate, like 3.2Mbit/s",
	"controller.steps":     "a list of steps like [{at: 5s, bitrate: 3.2Mbit/s}]",
	"expectation.measure":  "a measurement name, like latency.median",
}

// missing is the message for a required field that is not there.
func missing(object, key string) string {
	if h, ok := hints[object+"."+key]; ok {
		return "missing required field: expected " + h
	}
	return "missing required field"
}
