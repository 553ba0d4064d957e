package lab

import (
	"slices"
	"strings"

	"github.com/nuvirahub/latencylab/agent/encoder"
	// The lossless codecs register their presets with agent/encoder: linked
	// here, the lab runs them and the loader accepts their names.
	"github.com/nuvirahub/latencylab/agent/encoder/lossless"
	// OpenH264 registers the real H.264 presets ("openh264-real", ...),
	// which run where the library does.
	"github.com/nuvirahub/latencylab/agent/encoder/openh264"
	"github.com/nuvirahub/latencylab/scenarios"
)

// A scenario names its encoders by string; the lab resolves them (its
// plan, plan.Convert) and tells the loader which exist, so that a file naming
// another is refused with its line.
func init() { scenarios.SetEncoders(EncoderPresets()) }

// EncoderPresets lists the encoder presets a scenario may name: every
// preset of agent/encoder, the lossless codecs' and OpenH264's included.
// OpenH264's are marked missing, with the reason, where this build or
// machine cannot run them (no cgo, no library), so that a scenario naming
// one fails to load saying what is missing.
func EncoderPresets() []scenarios.EncoderPreset {
	var out []scenarios.EncoderPreset
	for _, name := range encoder.PresetNames() {
		if cfg, err := encoder.Preset(name); err == nil {
			p := scenarios.EncoderPreset{Name: name, Hardware: cfg.Hardware,
				Lossless: strings.HasPrefix(name, lossless.PresetPrefix)}
			p.Real = p.Lossless || IsRealEncoder(name)
			if IsRealEncoder(name) {
				if err := openh264.Available(); err != nil {
					p.Missing = err.Error()
				}
			}
			out = append(out, p)
		}
	}
	return out
}

// IsRealEncoder tells whether a preset is a real H.264 encoder (OpenH264,
// cgo): one the exact mode, in WebAssembly, cannot run.
func IsRealEncoder(preset string) bool {
	return slices.Contains(openh264.Presets(), preset)
}
