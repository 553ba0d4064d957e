package lab

import (
	"strings"

	"github.com/nuvirahub/latencylab/agent/encoder"
	// The lossless codecs register their presets with agent/encoder: linked
	// here, the lab runs them and the loader accepts their names.
	"github.com/nuvirahub/latencylab/agent/encoder/lossless"
	"github.com/nuvirahub/latencylab/scenarios"
)

// A scenario names its encoders by string; the lab resolves them
// (convertAgent) and tells the loader which exist, so that a file naming
// another is refused with its line.
func init() { scenarios.SetEncoders(EncoderPresets()) }

// EncoderPresets lists the encoder presets a scenario may name: every
// preset of agent/encoder, the lossless codecs' included.
func EncoderPresets() []scenarios.EncoderPreset {
	var out []scenarios.EncoderPreset
	for _, name := range encoder.PresetNames() {
		if cfg, err := encoder.Preset(name); err == nil {
			out = append(out, scenarios.EncoderPreset{Name: name, Hardware: cfg.Hardware,
				Lossless: strings.HasPrefix(name, lossless.PresetPrefix)})
		}
	}
	return out
}
