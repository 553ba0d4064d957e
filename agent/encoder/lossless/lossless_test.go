package lossless

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/agent/codec/hextile"
	"github.com/nuvirahub/latencylab/agent/codec/tile"
	"github.com/nuvirahub/latencylab/agent/codec/zrle"
	"github.com/nuvirahub/latencylab/agent/encoder"
	"github.com/nuvirahub/latencylab/agent/screen"
	"github.com/nuvirahub/latencylab/internal/dist"
)

// The unit tests paint a quarter of 1080p unless the size is the point:
// the codecs' work, and the test's time, grow with the pixels.
const testW, testH = 960, 540

func opened(t *testing.T, seed uint64, cfg Config) *Encoder {
	t.Helper()
	if cfg.Width == 0 {
		cfg.Width, cfg.Height = testW, testH
	}
	e, err := New(seed, cfg)
	require.NoError(t, err)
	require.NoError(t, e.Open())
	return e
}

// step is one new image: the version it makes and what changed since the
// previous one.
type step struct {
	changed, detail float64
}

// feed encodes a desktop of the given detail and then the steps, each a
// new version of the screen, as a capturer that misses nothing hands them
// over; it returns the frames.
func feed(t *testing.T, e *Encoder, desktop float64, steps ...step) []encoder.Frame {
	t.Helper()
	img := screen.Image{Version: 1, Changed: 1, Complexity: desktop, Whole: desktop}
	f, err := e.Encode(encoder.Input{Image: img, Delta: screen.Delta{From: 0, To: 1, Changed: 1, Complexity: desktop}})
	require.NoError(t, err)
	out := []encoder.Frame{f}
	for _, s := range steps {
		prev := img.Version
		img = screen.Image{Version: prev + 1, Changed: s.changed, Complexity: s.detail, Whole: desktop}
		f, err := e.Encode(encoder.Input{Image: img, Delta: screen.Delta{From: prev, To: img.Version, Changed: s.changed, Complexity: s.detail}})
		require.NoError(t, err)
		out = append(out, f)
	}
	return out
}

func decoder(t *testing.T, name string) codec.Decoder {
	t.Helper()
	switch name {
	case CodecTile:
		d, err := tile.NewDecoder()
		require.NoError(t, err)
		return d
	case CodecHextile:
		return hextile.NewDecoder()
	}
	return zrle.NewDecoder()
}

// The presets are registered with agent/encoder: listed, configured by
// name, built by Make, refused by the H.264 model's New.
func TestPresetsAreRegistered(t *testing.T) {
	names := encoder.PresetNames()
	for _, c := range Codecs() {
		p := PresetPrefix + c
		require.Contains(t, names, p)
		cfg, err := encoder.Preset(p)
		require.NoError(t, err)
		require.Equal(t, encoder.Config{Name: p}, cfg)
		require.False(t, cfg.Hardware, "a software preset: the agent's fallback, a scenario's agent.encoder")

		cfg.Bitrate = 2_000_000
		e, err := encoder.Make(1, cfg)
		require.NoError(t, err)
		require.IsType(t, &Encoder{}, e)
		require.Equal(t, p, e.Name())
		require.Equal(t, c, e.(*Encoder).Codec())
		require.Equal(t, 2_000_000, e.Bitrate())

		_, err = encoder.New(1, cfg)
		require.ErrorIs(t, err, encoder.ErrConfig, "an H.264 model must not pass for %s", p)
	}
	require.Panics(t, func() { encoder.Register(PresetTile, factory(CodecTile)) }, "registered twice")
	require.Panics(t, func() { encoder.Register(encoder.PresetOpenH264, factory(CodecTile)) }, "an H.264 preset's name")
	h, err := encoder.Make(1, encoder.Config{Name: encoder.PresetOpenH264Asm})
	require.NoError(t, err)
	require.IsType(t, &encoder.H264{}, h, "other names still make the H.264 model")
}

// What a preset cannot honour is an error, not silently ignored.
func TestPresetRefusesH264Fields(t *testing.T) {
	for name, change := range map[string]func(*encoder.Config){
		"hardware":    func(c *encoder.Config) { c.Hardware = true },
		"encode time": func(c *encoder.Config) { c.EncodeTime = dist.Constant(time.Millisecond) },
		"N16 switch":  func(c *encoder.Config) { c.OldRestartOnBitrateChange = true },
		"budget":      func(c *encoder.Config) { c.KeyframeFactor = 2 },
		"absent":      func(c *encoder.Config) { c.Absent = true },
		"bitrate":     func(c *encoder.Config) { c.Bitrate = -1 },
	} {
		cfg := encoder.Config{Name: PresetZRLE}
		change(&cfg)
		_, err := encoder.Make(1, cfg)
		require.ErrorIs(t, err, encoder.ErrConfig, name)
	}
	_, err := New(1, Config{Codec: "tight"})
	require.ErrorIs(t, err, encoder.ErrConfig)
	_, err = New(1, Config{Codec: CodecTile, Width: 70_000})
	require.ErrorIs(t, err, encoder.ErrConfig)
}

// Every frame is the real codec's output: the codec's own decoder turns
// the bytes, frame after frame, into exactly the picture the encoder
// painted. A still screen costs a few bytes (the codec's empty frame), a
// keystroke a kilobyte or so, a window tens, a full-screen change the order
// of a keyframe.
func TestBytesAreTheCodecs(t *testing.T) {
	steps := []step{
		{0.005, 0.6}, // a keystroke
		{0, 0},       // nothing (the same content captured again)
		{0.2, 0.5},   // a window
		{1, 0.6},     // the whole screen
	}
	for _, c := range Codecs() {
		t.Run(c, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := opened(t, 1, Config{Codec: c})
				dec := decoder(t, c)
				var pic *codec.Frame
				var fs []encoder.Frame
				for i := range len(steps) + 1 {
					var in encoder.Input
					if i == 0 {
						in.Image = screen.Image{Version: 1, Changed: 1, Complexity: 0.5, Whole: 0.5}
						in.Delta = screen.Delta{To: 1, Changed: 1, Complexity: 0.5}
					} else {
						s, v := steps[i-1], uint64(i+1)
						in.Image = screen.Image{Version: v, Changed: s.changed, Complexity: s.detail, Whole: 0.5}
						in.Delta = screen.Delta{From: v - 1, To: v, Changed: s.changed, Complexity: s.detail}
					}
					f, err := e.Encode(in)
					require.NoError(t, err)
					require.Equal(t, i == 0, f.Keyframe)
					require.Len(t, e.buf, f.Bytes, "the frame's size is the codec's output")
					pic, err = dec.Decode(pic, testW, testH, e.buf)
					require.NoError(t, err)
					require.Equal(t, e.cur.Pix, pic.Pix, "frame %d: the viewer's picture is the encoder's", i)
					fs = append(fs, f)
				}
				key, keystroke, still, window, full := fs[0].Bytes, fs[1].Bytes, fs[2].Bytes, fs[3].Bytes, fs[4].Bytes
				t.Logf("%s: keyframe %d B, keystroke %d B, still %d B, window %d B, full screen %d B", c, key, keystroke, still, window, full)
				require.Less(t, still, 20, "nothing changed: the codec's empty frame")
				require.Greater(t, keystroke, 10*still)
				require.Greater(t, window, 5*keystroke)
				require.Greater(t, full, 2*window)
				require.Greater(t, 2*full, key, "a full-screen change costs a keyframe's order")
			})
		})
	}
}

// E6 through the encoder: on a gradient keyframe (a photo at PhotoDetail,
// the least grain) the tile codec writes far less than Hextile, which
// falls back to Raw tiles where no two pixels are equal.
func TestTileSmallerThanHextileOnGradientKeyframe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		size := map[string]int{}
		for _, c := range []string{CodecTile, CodecHextile} {
			size[c] = feed(t, opened(t, 1, Config{Codec: c}), PhotoDetail)[0].Bytes
		}
		t.Logf("gradient keyframe %dx%d: tile %d B, hextile %d B (%.1fx)", testW, testH, size[CodecTile], size[CodecHextile],
			float64(size[CodecHextile])/float64(size[CodecTile]))
		require.Greater(t, size[CodecHextile], 2*size[CodecTile])
		require.Greater(t, size[CodecHextile], 3*testW*testH, "Raw: 4 bytes a pixel, less the tiles that found subrectangles")
	})
}

// Same seed, same calls: the same bytes and times. Another seed paints
// other pixels.
func TestDeterministic(t *testing.T) {
	steps := []step{{0.01, 0.6}, {0.3, 0.9}, {0.002, 0.6}, {0.05, 0.3}}
	synctest.Test(t, func(t *testing.T) {
		for _, c := range Codecs() {
			a := feed(t, opened(t, 7, Config{Codec: c}), 0.5, steps...)
			b := feed(t, opened(t, 7, Config{Codec: c}), 0.5, steps...)
			o := feed(t, opened(t, 8, Config{Codec: c}), 0.5, steps...)
			differs := false
			for i := range a {
				require.Equal(t, a[i].Bytes, b[i].Bytes, "%s frame %d", c, i)
				require.Equal(t, a[i].EncodeTime, b[i].EncodeTime, "%s frame %d", c, i)
				differs = differs || a[i].Bytes != o[i].Bytes
			}
			require.True(t, differs, "%s: seeds 7 and 8 painted the same", c)
		}
	})
}

// The encode's time is the model's, taken in virtual time while the
// session is held: at 1080p a still frame costs the detector's scan alone,
// 260 us; a keyframe no scan and every tile at its kind's rate.
func TestEncodeTimeIsTheModel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, c := range Codecs() {
			e := opened(t, 1, Config{Codec: c, Width: DefaultWidth, Height: DefaultHeight})
			fs := feed(t, e, 0.5, step{0, 0}, step{0.5, 0.9})
			for _, f := range fs {
				require.Equal(t, f.EncodeTime, f.End.Sub(f.Start), "%s: the call takes the encode's time", c)
				require.Zero(t, f.Waited)
			}
			r := codecRates[c]
			tiles := 60 * 34 // 1080 rows: 33 full tile rows and one of 24
			full := time.Duration(float64(4*1920*1080) / r.kind[kindText] * 1e9)
			require.InDelta(t, full, fs[0].EncodeTime, float64(time.Microsecond), "%s keyframe: %d text tiles", c, tiles)
			require.Equal(t, scan1080p, fs[1].EncodeTime, "%s: a still frame is the scan", c)
			require.Greater(t, fs[2].EncodeTime, scan1080p)
			t.Logf("%s: keyframe %v, still %v, half the screen as a photo %v (%d B)", c, fs[0].EncodeTime, fs[1].EncodeTime, fs[2].EncodeTime, fs[2].Bytes)
		}
	})
}

// Keyframes: the first frame, one requested, one whose delta does not
// start from what the viewer has.
func TestKeyframes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := opened(t, 1, Config{Codec: CodecTile})
		fs := feed(t, e, 0.5, step{0.01, 0.6})
		require.True(t, fs[0].Keyframe)
		require.False(t, fs[1].Keyframe)

		e.RequestKeyframe()
		f, err := e.Encode(encoder.Input{Image: screen.Image{Version: 3, Whole: 0.5}, Delta: screen.Delta{From: 2, To: 3, Changed: 0.01, Complexity: 0.6}})
		require.NoError(t, err)
		require.True(t, f.Keyframe)
		require.Greater(t, f.Bytes, fs[0].Bytes/2)

		f, err = e.Encode(encoder.Input{Image: screen.Image{Version: 5, Whole: 0.5}, Delta: screen.Delta{From: 4, To: 5, Changed: 0.01, Complexity: 0.6}})
		require.NoError(t, err)
		require.True(t, f.Keyframe, "the viewer has version 3, the delta starts from 4")
		f, err = e.Encode(encoder.Input{Image: screen.Image{Version: 6, Whole: 0.5}, Delta: screen.Delta{From: 5, To: 6, Changed: 0.01, Complexity: 0.6}})
		require.NoError(t, err)
		require.False(t, f.Keyframe)
	})
}

// Refinement has nothing to add to a lossless picture: an empty pass that
// takes no time, unless a keyframe was requested since.
func TestRefineIsEmpty(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := opened(t, 1, Config{Codec: CodecHextile})
		_, err := e.Refine()
		require.ErrorIs(t, err, encoder.ErrNoImage)
		feed(t, e, 0.5, step{0.01, 0.6})

		f, err := e.Refine()
		require.NoError(t, err)
		require.Equal(t, encoder.Frame{Encoder: PresetHextile, Version: 2, Pass: 1, Quality: 1, Matched: true,
			Bitrate: encoder.DefaultBitrate, Start: f.Start, End: f.Start}, f)

		e.RequestKeyframe()
		f, err = e.Refine()
		require.NoError(t, err)
		require.True(t, f.Keyframe)
		require.Equal(t, 2, f.Pass)
		require.Positive(t, f.Bytes)
		require.Positive(t, f.EncodeTime)
	})
}

// The target bitrate is recorded and changes nothing: no time, no restart,
// not a byte of any frame.
func TestBitrateIsIgnored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := opened(t, 1, Config{Codec: CodecZRLE, Bitrate: 500_000})
		b := opened(t, 1, Config{Codec: CodecZRLE})
		start := time.Now()
		require.NoError(t, b.SetBitrate(50_000_000))
		require.Equal(t, start, time.Now(), "nothing to reconfigure")
		require.Equal(t, 50_000_000, b.Bitrate())
		steps := []step{{0.01, 0.6}, {0.2, 0.9}}
		fa, fb := feed(t, a, 0.5, steps...), feed(t, b, 0.5, steps...)
		for i := range fa {
			require.Equal(t, fa[i].Bytes, fb[i].Bytes)
			require.Equal(t, 500_000, fa[i].Bitrate)
			require.Equal(t, 50_000_000, fb[i].Bitrate)
		}
		require.ErrorIs(t, b.SetBitrate(0), encoder.ErrConfig)

		require.NoError(t, b.Close())
		require.ErrorIs(t, b.SetBitrate(1_000_000), encoder.ErrNotOpen)
		_, err := b.Encode(encoder.Input{})
		require.ErrorIs(t, err, encoder.ErrNotOpen)
		_, err = b.Refine()
		require.ErrorIs(t, err, encoder.ErrNotOpen)
	})
}
