package lossless

import (
	"errors"
	"fmt"

	"github.com/nuvirahub/latencylab/agent/encoder"
)

// PresetPrefix starts the preset name of every lossless encoder.
const PresetPrefix = "lossless-"

// The presets this package registers with agent/encoder, usable wherever
// an encoder preset is chosen by name (a scenario's agent.encoder, the
// agent's Software encoder).
const (
	PresetTile    = PresetPrefix + CodecTile
	PresetHextile = PresetPrefix + CodecHextile
	PresetZRLE    = PresetPrefix + CodecZRLE
)

func init() {
	for _, c := range Codecs() {
		encoder.Register(PresetPrefix+c, factory(c))
	}
}

// factory builds the preset's encoder from an encoder.Config. Of that
// configuration only the name and the starting bitrate mean anything here;
// the rest describes the H.264 model (its encode time, rate control and
// restart), and a value set on it is refused rather than silently ignored:
// the encode time of a lossless encoder comes from its codec's measured
// throughput, and a lossless encoder has no bitrate to restart on.
func factory(c string) encoder.Factory {
	return func(seed uint64, cfg encoder.Config) (encoder.Encoder, error) {
		var errs []error
		refuse := func(set bool, what string) {
			if set {
				errs = append(errs, errors.New(what))
			}
		}
		refuse(cfg.Hardware || cfg.Device != nil, "it runs on the processor, not on a graphics device")
		refuse(cfg.Absent || cfg.OpenFailure != "" || cfg.OpenTime != 0, "software is always there: no absence, open failure or open time")
		refuse(!cfg.EncodeTime.IsZero(), "its encode time is modelled from the codec's measured throughput, not given")
		refuse(!cfg.Reconfigure.IsZero() || cfg.OldRestartOnBitrateChange || cfg.Restart != 0,
			"it has no rate control: a bitrate change neither reconfigures nor restarts it (N16 does not apply)")
		refuse(cfg.FrameRate != 0 || cfg.MaxSpan != 0 || cfg.KeyframeFactor != 0 || cfg.FullScreenBits != 0 || cfg.OverheadBytes != 0,
			"its frame sizes are the codec's, not the H.264 model's budget")
		if err := errors.Join(errs...); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", encoder.ErrConfig, cfg.Name, err)
		}
		return New(seed, Config{Codec: c, Name: cfg.Name, Bitrate: cfg.Bitrate})
	}
}
