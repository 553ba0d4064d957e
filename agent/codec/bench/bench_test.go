package bench

import (
	"testing"
	"time"
)

// Every codec round-trips every case of the matrix at its real size (Run
// decodes and compares), with one timed encode: the benchmark cannot
// report a figure for a codec that is wrong.
func TestEveryCodecOnEveryCase(t *testing.T) {
	if testing.Short() {
		t.Skip("the full matrix at 1080p and 4K takes a while; run without -short")
	}
	for _, c := range Cases() {
		if c.W > 1920 {
			continue // 4K keyframes are covered by the benchmark command
		}
		for _, cd := range Codecs() {
			r, err := Run(c, cd, 0, 1)
			if err != nil {
				t.Fatal(err)
			}
			if r.Bytes <= 0 || r.Median <= 0 {
				t.Fatalf("%s/%s: %+v", c.Name, cd.Name, r)
			}
		}
	}
}

// BenchmarkCodecs is the matrix as go test -bench cases (benchstat-friendly):
// go test ./agent/codec/bench -run '^$' -bench . -benchtime 200x
func BenchmarkCodecs(b *testing.B) {
	for _, c := range Cases() {
		prev, cur := c.Frames()
		for _, cd := range Codecs() {
			b.Run(c.Name+"/"+cd.Name, func(b *testing.B) {
				enc, _, err := cd.New()
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(c.W * c.H * 4))
				var out []byte
				rects := runDetect(prev, cur, nil)
				for b.Loop() {
					rects = runDetect(prev, cur, rects[:0])
					if out, err = enc.Encode(out[:0], prev, cur, rects); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(out)), "bytes/frame")
			})
		}
	}
}

func TestTableShowsBytesTimeAndThroughput(t *testing.T) {
	cases := []Case{{Name: "key-solid-720p"}}
	cds := []Codec{{Name: "tile"}}
	got := Table(cases, cds, []Result{{Case: "key-solid-720p", Codec: "tile", Bytes: 592, Median: 2217 * time.Microsecond, MBps: 1663}})
	want := "| case | tile bytes | tile time |\n|---|---|---|\n| key-solid-720p | 592 | 2.217ms (1663 MB/s) |\n"
	if got != want {
		t.Fatalf("table:\n%s\nwant:\n%s", got, want)
	}
}
