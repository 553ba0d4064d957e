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
	PresetOpenH264Asm: openH264Sizes(Config{Name: PresetOpenH264Asm, EncodeTime: dist.Constant(9 * time.Millisecond)}),
	PresetOpenH264:    openH264Sizes(Config{Name: PresetOpenH264, EncodeTime: dist.Constant(19 * time.Millisecond)}),
	PresetBusyPC:      openH264Sizes(Config{Name: PresetBusyPC, EncodeTime: dist.Constant(130 * time.Millisecond)}),
	PresetQuickSync:   {Name: PresetQuickSync, Hardware: true, EncodeTime: dist.Constant(4 * time.Millisecond)},
	PresetNVENC:       {Name: PresetNVENC, Hardware: true, EncodeTime: dist.Constant(3 * time.Millisecond)},
}

// openH264Sizes gives a preset the frame sizes of OpenH264, as the
// calibration against the real encoder fitted them (agent/encoder/calibrate;
// docs/codecs.md, "The model calibrated against OpenH264"): at 720p, the
// painter's default and the real-encoder scenarios' size, each content kind
// of the screen model at 0.25 to 8 Mbit/s with frame skipping on. The first
// keyframe ignores the target; moving content (a panning animation,
// scrolling, a video) costs little a frame at 60 Hz but a frame carrying
// many versions costs as many shifts, so at low targets the rate control
// skips most frames, as OpenH264's does; typing and a photo are new content
// at every change. The rate control skips frames as OpenH264's bitrate
// mode does, counting the frames offered (SkipByFrames). Recorded desktops
// (agent/screen.Recording) have costs of their own, fitted on the corpus
// of recordings with everything else held (calibrate.CompareRecorded;
// docs/codecs.md, "The model's error per content kind"): a recorded
// first keyframe of 1.4 Mbit for a whole screen; a recorded change's
// detail weighed by the share of its damaged pixels that changed to the
// power 0.3 (FillExponent), at most 1 Mbit for a whole screen a version,
// at least 20 KB when it needs more than the budget; and a recorded change
// that a shift explains is motion, a dragged window's and a scrolled
// page's at costs of their own.
// Budgeted takes these out again.
func openH264Sizes(c Config) Config {
	c.SkipRule = SkipByFrames
	c.FullScreenBits = 2e6
	c.KeyframeFactor = 1
	c.MinFrameBytes = 10_000
	c.FirstKeyframeBits = 2e6
	c.FillExponent = 0.3
	c.Content = []ContentCost{
		{Kind: "animation", MotionBits: 32e3, MinFrameBytes: 40_000, KeyframeBits: 0.7e6},
		{Kind: "photo", KeyframeBits: 2.8e6},
		{Kind: "recording", MotionBits: 1e6, MinFrameBytes: 20_000, KeyframeBits: 1.4e6},
		{Kind: "recording-motion", MotionBits: 32e3, MinFrameBytes: 20_000},
		{Kind: "recording-scroll", MotionBits: 192e3},
		{Kind: "scrolling", MotionBits: 40e3, MinFrameBytes: 30_000, KeyframeBits: 2.8e6},
		{Kind: "video", MotionBits: 56e3, MinFrameBytes: 20_000, KeyframeBits: 2.8e6},
	}
	return c
}

// Budgeted returns cfg with the parameters that size frames at their
// defaults: every frame of new content spends its share of the target
// bitrate (a keyframe four shares), whatever the content, and the rate
// control skips frames only below the smallest frame's bitrate. That is a
// constant-bitrate rate control holding the target at every frame, as the
// write-up's hardware encoders do, and the rule the scenario library's
// findings are reproduced with; a preset's calibrated sizes and skip rule
// (openH264Sizes) are gone. Its timing, bitrate and switches stay.
func Budgeted(cfg Config) Config {
	cfg.FullScreenBits, cfg.KeyframeFactor, cfg.MinFrameBytes = 0, 0, 0
	cfg.FirstKeyframeBits, cfg.Content, cfg.FillExponent = 0, nil, 0
	cfg.SkipRule = SkipByTime
	return cfg
}

// Calibrated tells whether cfg sizes frames otherwise than Budgeted: a
// preset with a calibration, or a configuration that sets its own sizes.
func Calibrated(cfg Config) bool {
	b := Budgeted(cfg)
	return cfg.FullScreenBits != b.FullScreenBits || cfg.KeyframeFactor != b.KeyframeFactor ||
		cfg.MinFrameBytes != b.MinFrameBytes || cfg.FirstKeyframeBits != 0 || len(cfg.Content) > 0 ||
		cfg.FillExponent != 0 || cfg.SkipRule != b.SkipRule
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
	cfg.Content = slices.Clone(cfg.Content) // the caller's to change
	return cfg, nil
}
