// Package jobspec reads what a job of the lab is asked to run: which
// scenarios of the library (Select: by name or group), under which
// configuration (Parse: a named one such as old-pipeline, or settings such
// as threshold=80ms), with which seeds (ParseSeeds). The nightly, compare
// and lab test take their flags through it. It is parsing only, free of
// the sessions, so that its parsers are fuzzed without building the lab.
package jobspec

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nuvirahub/latencylab/scenarios"
)

// AsWritten is the configuration that changes nothing: the scenario as its
// file says, the product with every fix.
const AsWritten = "as-written"

// Config is a configuration as a user names it: a named variant, optionally
// followed by settings that override the scenario's ("old-abr,hold=2s",
// "threshold=80ms,decrease=25%": settings alone start from as-written).
type Config struct {
	// Spec is what the user wrote, trimmed; it labels the configuration in
	// reports.
	Spec string
	// Named is the named variant it starts from.
	Named NamedConfig
	// Settings are the overrides, in order.
	Settings []Setting
}

// NamedConfig is a configuration the lab knows by name.
type NamedConfig struct {
	// Name is what a user writes (-variant, -a, -b).
	Name string
	// Doc says what it changes and which finding it restores or exercises.
	Doc string
	// Changes are its changes as scenario keys, for reports.
	Changes map[string]string
	apply   func(*scenarios.Scenario) error
}

// Setting is one key=value override.
type Setting struct {
	// Key and Value are as written: threshold, 80ms.
	Key, Value string
	apply      func(*scenarios.Scenario) error
}

// errNotABR is a setting for the ABR on a scenario without it.
func errNotABR(what string, sc *scenarios.Scenario) error {
	kind := sc.Controller.Kind
	if kind == "" {
		kind = "fixed"
	}
	return fmt.Errorf("%s applies to the ABR controller, and scenario %s's controller is %s", what, sc.Name, kind)
}

// twoSite is the write-up's LAN in the two-site topology: both PCs behind
// one router, the relay 2.5 ms away (path-lan-direct's set-up), for the
// path variants of a scenario without a path.
func twoSite() scenarios.Path {
	return scenarios.Path{Connect: "auto", AgentNAT: "port-restricted-cone", SameRouter: true, RelayDelay: 2500 * time.Microsecond}
}

// NamedConfigs are the configurations known by name: the product as
// written, each documented old behaviour back (the findings' bugs, which a
// nightly must catch), a slow encoder and the fallback paths.
var NamedConfigs = []NamedConfig{
	{Name: AsWritten, Doc: "the scenario as written: no change", apply: func(*scenarios.Scenario) error { return nil }},
	{Name: "old-pipeline", Doc: "N7's bug: the image is captured first and waits for the encoder",
		Changes: map[string]string{"switches.old_capture_first": "true"},
		apply:   func(sc *scenarios.Scenario) error { sc.Switches.OldCaptureFirst = true; return nil }},
	{Name: "old-capture-lock", Doc: "N6's bug: capture waits for a new image holding the device lock",
		Changes: map[string]string{"switches.old_wait_for_frame": "true"},
		apply:   func(sc *scenarios.Scenario) error { sc.Switches.OldWaitForFrame = true; return nil }},
	{Name: "old-show-every-frame", Doc: "N8's bug: a slow viewer shows every frame in order",
		Changes: map[string]string{"switches.old_show_every_frame": "true"},
		apply:   func(sc *scenarios.Scenario) error { sc.Switches.OldShowEveryFrame = true; return nil }},
	{Name: "old-encoder-restart", Doc: "N16's bug: the encoder restarts at every bitrate change",
		Changes: map[string]string{"switches.old_restart_on_bitrate_change": "true"},
		apply:   func(sc *scenarios.Scenario) error { sc.Switches.OldRestartOnBitrateChange = true; return nil }},
	{Name: "old-abr", Doc: "the ABR's bugs N12-N14: total latency, any utilisation, single peaks (ABR scenarios only)",
		Changes: map[string]string{"switches.old_abr_total_latency": "true", "switches.old_abr_ignores_utilisation": "true", "switches.old_abr_single_peaks": "true"},
		apply: func(sc *scenarios.Scenario) error {
			if sc.Controller.Kind != "abr" {
				return errNotABR("old-abr", sc)
			}
			sw := &sc.Switches
			sw.OldABRTotalLatency, sw.OldABRIgnoresUtilisation, sw.OldABRSinglePeaks = true, true, true
			return nil
		}},
	{Name: "busy-pc", Doc: "N12's busy PC: 130 ms encodes",
		Changes: map[string]string{"agent.encoder": "busy-pc"},
		apply:   func(sc *scenarios.Scenario) error { sc.Agent.Encoder = "busy-pc"; return nil }},
	{Name: "relay", Doc: "through the relay (N18, E14 force_relay); a scenario without a path gets path-lan-relay's",
		Changes: map[string]string{"path.force_relay": "true"},
		apply: func(sc *scenarios.Scenario) error {
			if sc.Path.Plain() {
				sc.Path = twoSite()
			}
			if sc.Path.Connect == "direct" || sc.Path.Connect == "websocket" || sc.Path.Connect == "" {
				sc.Path.Connect = "auto"
			}
			sc.Path.ForceRelay = true
			return nil
		}},
	{Name: "websocket", Doc: "through the relay inside a WebSocket (N19); a scenario without a path gets path-lan-direct's",
		Changes: map[string]string{"path.connect": "websocket"},
		apply: func(sc *scenarios.Scenario) error {
			if sc.Path.Plain() {
				sc.Path = twoSite()
			}
			sc.Path.Connect, sc.Path.ForceRelay = "websocket", false
			return nil
		}},
}

// settingKey is a key of Setting: parse reads a value and returns the
// change it makes.
type settingKey struct {
	key, doc string
	parse    func(key, value string) (func(*scenarios.Scenario) error, error)
}

// settingKeys are the keys a Setting may set, and how to read each value:
// the ABR's rule (N10), which a tuning session varies, and the encoder.
var settingKeys = []settingKey{
	{"threshold", "ABR: latency above the baseline that counts as a queue (duration)", abrDuration},
	{"window", "ABR: the window of the median (duration)", abrDuration},
	{"baseline", "ABR: the window of the minimum (duration)", abrDuration},
	{"sustain", "ABR: how long a queue must last (duration)", abrDuration},
	{"close", "ABR: how close to the baseline counts as no queue (duration)", abrDuration},
	{"hold", "ABR: the pause after each change (duration)", abrDuration},
	{"decrease", "ABR: the cut on a queue (percentage)", abrPercent},
	{"increase", "ABR: the rise without one (percentage)", abrPercent},
	{"guard", "ABR: the share of the target the video must use (percentage)", abrPercent},
	{"encoder", "the agent's software encoder preset", encoderPreset},
	{"frame_sizes", "the H.264 model's frame sizes: calibrated (OpenH264's, fitted) or budget (every frame at its share of the target)", frameSizes},
	{"controller", "the adaptive bitrate controller, abr or gcc, with the scenario's initial bitrate and bounds", controllerKind},
	{"policy", "the viewer's policy for a frame held back: drop, wait, keyframe or refresh (docs/policies.md)", viewerPolicy},
}

// SettingKeys lists the keys of Setting, for usage messages.
func SettingKeys() []string {
	var out []string
	for _, k := range settingKeys {
		out = append(out, k.key)
	}
	return out
}

func abrDuration(key, value string) (func(*scenarios.Scenario) error, error) {
	d, err := scenarios.ParseDuration(value)
	if err != nil {
		return nil, err
	}
	if d <= 0 {
		return nil, fmt.Errorf("%s out of range: expected a duration above 0s", value)
	}
	return func(sc *scenarios.Scenario) error {
		if sc.Controller.Kind != "abr" {
			return errNotABR(key, sc)
		}
		*sc.Controller.ABRDuration(key) = d
		return nil
	}, nil
}

func abrPercent(key, value string) (func(*scenarios.Scenario) error, error) {
	f, err := scenarios.ParsePercent(value)
	if err != nil {
		return nil, err
	}
	switch {
	case key == "increase" && f <= 0:
		return nil, fmt.Errorf("%s out of range: expected a percentage above 0%%", value)
	case key != "increase" && (f <= 0 || f > 1):
		return nil, fmt.Errorf("%s out of range: expected a percentage above 0%% up to 100%%", value)
	}
	return func(sc *scenarios.Scenario) error {
		if sc.Controller.Kind != "abr" {
			return errNotABR(key, sc)
		}
		*sc.Controller.ABRShare(key) = f
		return nil
	}, nil
}

// controllerKind swaps an adaptive controller for the other kind (abr or
// gcc), keeping its initial bitrate and bounds (scenarios.Controller.As):
// the same sessions under the product's ABR and under GCC. Session flows
// that take the scenario's controller change with it.
func controllerKind(_, value string) (func(*scenarios.Scenario) error, error) {
	if _, err := (scenarios.Controller{Kind: "abr"}).As(value); err != nil {
		return nil, err
	}
	return func(sc *scenarios.Scenario) error {
		c, err := sc.Controller.As(value)
		if err != nil {
			return fmt.Errorf("scenario %s: %w", sc.Name, err)
		}
		sc.Controller = c
		return nil
	}, nil
}

func encoderPreset(_, value string) (func(*scenarios.Scenario) error, error) {
	if !slices.Contains(scenarios.SoftwarePresets(), value) {
		return nil, fmt.Errorf("unknown encoder %q: expected one of %s", value, strings.Join(scenarios.SoftwarePresets(), ", "))
	}
	return func(sc *scenarios.Scenario) error {
		sc.Agent.Encoder = value
		if scenarios.IsRealPreset(value) {
			sc.Agent.FrameSizes = "" // the library's budget sizes are the model's, not a real codec's
		}
		return nil
	}, nil
}

func frameSizes(_, value string) (func(*scenarios.Scenario) error, error) {
	if !slices.Contains(scenarios.FrameSizes, value) {
		return nil, fmt.Errorf("unknown frame sizes %q: expected one of %s", value, strings.Join(scenarios.FrameSizes, ", "))
	}
	return func(sc *scenarios.Scenario) error {
		if scenarios.IsRealPreset(sc.Agent.Encoder) {
			return fmt.Errorf("scenario %s: frame_sizes does not apply to %s, a real encoder", sc.Name, sc.Agent.Encoder)
		}
		sc.Agent.FrameSizes = value
		return nil
	}, nil
}

// viewerPolicy sets the viewer's policy for a frame that arrives after a
// newer one. refresh needs the H.264 model's rolling refresh: a scenario
// whose encoder has none is refused by its validation, naming it.
func viewerPolicy(_, value string) (func(*scenarios.Scenario) error, error) {
	if !slices.Contains(scenarios.ViewerPolicies, value) {
		return nil, fmt.Errorf("unknown policy %q: expected one of %s", value, strings.Join(scenarios.ViewerPolicies, ", "))
	}
	return func(sc *scenarios.Scenario) error {
		sc.Viewer.Policy = value
		return nil
	}, nil
}

// Parse reads a configuration: a named configuration
// (NamedConfigs), settings key=value (SettingKeys), or a name followed by
// settings, separated by commas. Settings alone start from as-written.
func Parse(spec string) (Config, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return Config{}, errors.New("empty configuration: expected a name like old-pipeline, settings like threshold=80ms, or both: old-abr,hold=2s")
	}
	c := Config{Spec: spec, Named: NamedConfigs[0]}
	for i, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		key, value, isSetting := strings.Cut(part, "=")
		if !isSetting {
			if i > 0 {
				return Config{}, fmt.Errorf("configuration %q: %q is not key=value: a configuration's name comes first, settings after it", spec, part)
			}
			n, err := lookupNamed(part)
			if err != nil {
				return Config{}, fmt.Errorf("configuration %q: %w", spec, err)
			}
			c.Named = n
			continue
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		j := slices.IndexFunc(settingKeys, func(k settingKey) bool { return k.key == key })
		if j < 0 {
			return Config{}, fmt.Errorf("configuration %q: unknown setting %q%s: settings are %s", spec, key, suggest(key, SettingKeys()), strings.Join(SettingKeys(), ", "))
		}
		for _, s := range c.Settings {
			if s.Key == key {
				return Config{}, fmt.Errorf("configuration %q: %s set twice", spec, key)
			}
			// The swap starts the new controller from its defaults, so
			// an ABR setting before it would be lost without a word.
			if key == "controller" && s.Key != "encoder" {
				return Config{}, fmt.Errorf("configuration %q: controller=%s comes before the ABR's settings (%s is set before it)", spec, value, s.Key)
			}
		}
		apply, err := settingKeys[j].parse(key, value)
		if err != nil {
			return Config{}, fmt.Errorf("configuration %q: %s: %w", spec, key, err)
		}
		c.Settings = append(c.Settings, Setting{Key: key, Value: value, apply: apply})
	}
	return c, nil
}

func lookupNamed(name string) (NamedConfig, error) {
	var names []string
	for _, n := range NamedConfigs {
		if n.Name == name {
			return n, nil
		}
		names = append(names, n.Name)
	}
	return NamedConfig{}, fmt.Errorf("unknown configuration %q%s: configurations are %s, or settings key=value", name, suggest(name, names), strings.Join(names, ", "))
}

// suggest names the closest candidate when one is a likely typo.
func suggest(s string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		if d := distance(s, c); d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" {
		return ""
	}
	return " (did you mean " + best + "?)"
}

// distance is the Levenshtein distance of a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// Changes describes the configuration as scenario keys and values, for a
// suite's Config.
func (c Config) Changes() map[string]string {
	out := map[string]string{}
	for k, v := range c.Named.Changes {
		out[k] = v
	}
	for _, s := range c.Settings {
		key := "controller." + s.Key
		switch s.Key {
		case "encoder", "frame_sizes":
			key = "agent." + s.Key
		case "controller":
			key = "controller.kind"
		case "policy":
			key = "viewer.policy"
		}
		out[key] = s.Value
	}
	return out
}

// Apply changes a scenario into this configuration and validates the
// result, so that a setting the scenario cannot take (an ABR threshold on
// a fixed bitrate, a baseline shorter than the window) is an error naming
// the scenario, not a silently different session.
func (c Config) Apply(sc *scenarios.Scenario) error {
	if err := c.Named.apply(sc); err != nil {
		return err
	}
	for _, s := range c.Settings {
		if err := s.apply(sc); err != nil {
			return err
		}
	}
	if err := sc.Validate(); err != nil {
		return fmt.Errorf("scenario %s under %s: %w", sc.Name, c.Spec, err)
	}
	return nil
}

// ParseSeeds reads a comma-separated list of seeds ("1,2,3"), refusing
// duplicates: a seed run twice would count as two runs and narrow every
// interval it should not.
func ParseSeeds(s string) ([]uint64, error) {
	var out []uint64
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		v, err := strconv.ParseUint(part, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("seeds %q: %q is not a seed (a whole number from 0)", s, part)
		}
		if slices.Contains(out, v) {
			return nil, fmt.Errorf("seeds %q: %d twice", s, v)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("seeds %q: no seed: expected a list like 1,2,3", s)
	}
	return out, nil
}
