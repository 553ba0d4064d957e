package encoder

import (
	"fmt"
	"slices"
	"time"

	"github.com/nuvirahub/latencylab/internal/dist"
)

// The presets' names.
const (
	// PresetOpenH264Asm is OpenH264 in software, built with its assembly
	// optimisations: 9 ms per frame (N5), what the agent falls back to.
	PresetOpenH264Asm = "openh264-asm"
	// PresetOpenH264 is OpenH264 built without assembly: 19 ms per frame
	// (N5).
	PresetOpenH264 = "openh264"
	// PresetBusyPC is OpenH264 on a loaded PC: 130 ms per frame (N12).
	PresetBusyPC = "busy-pc"
	// PresetQuickSync is Intel Quick Sync through Media Foundation.
	PresetQuickSync = "quicksync"
	// PresetNVENC is NVIDIA NVENC through Media Foundation.
	PresetNVENC = "nvenc"
)

// presets hold only what differs between encoders; every other field keeps
// its default. The hardware encode times are not in the write-up ("a few
// ms", inside the 38 ms end to end of N20): they are this lab's assumption,
// to be replaced by a measurement when there is one.
var presets = map[string]Config{
	PresetOpenH264Asm: {Name: PresetOpenH264Asm, EncodeTime: dist.Constant(9 * time.Millisecond)},
	PresetOpenH264:    {Name: PresetOpenH264, EncodeTime: dist.Constant(19 * time.Millisecond)},
	PresetBusyPC:      {Name: PresetBusyPC, EncodeTime: dist.Constant(130 * time.Millisecond)},
	PresetQuickSync:   {Name: PresetQuickSync, Hardware: true, EncodeTime: dist.Constant(4 * time.Millisecond)},
	PresetNVENC:       {Name: PresetNVENC, Hardware: true, EncodeTime: dist.Constant(3 * time.Millisecond)},
}

// PresetNames lists the presets, sorted: the H.264 model's above and those
// registered by the packages the program links (Register).
func PresetNames() []string {
	names := registeredNames()
	for n := range presets {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Preset returns the configuration of a named preset, to adjust (a Device
// for the hardware ones, Absent, a starting Bitrate, the old switches) before
// Make. A registered preset's configuration is its name only: its own
// package holds the rest.
func Preset(name string) (Config, error) {
	if _, ok := factory(name); ok {
		return Config{Name: name}, nil
	}
	cfg, ok := presets[name]
	if !ok {
		return Config{}, fmt.Errorf("%w: unknown preset %q (have %v)", ErrConfig, name, PresetNames())
	}
	return cfg, nil
}
