package scenarios

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseDuration(t *testing.T) {
	good := map[string]time.Duration{
		"25ms": 25 * time.Millisecond, "1.5s": 1500 * time.Millisecond, "500us": 500 * time.Microsecond,
		"500µs": 500 * time.Microsecond, "500μs": 500 * time.Microsecond, "2m": 2 * time.Minute, "1h": time.Hour,
		"1m30s": 90 * time.Second, "0s": 0, "-1s": -time.Second, ".5s": 500 * time.Millisecond,
		"0.25ms": 250 * time.Microsecond, "7ns": 7,
	}
	for in, want := range good {
		got, err := ParseDuration(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	bad := map[string]string{
		"25":       "25 is missing a unit: expected a duration like 25ms, 1.5s or 500us",
		"0":        "0 is missing a unit: expected a duration like 25ms, 1.5s or 500us",
		"1.5":      "1.5 is missing a unit: expected a duration like 25ms, 1.5s or 500us",
		"25 ms":    "25 ms has a space before its unit: expected a duration like 25ms, 1.5s or 500us",
		"25sec":    `25sec has an unknown unit "sec": expected a duration like 25ms, 1.5s or 500us`,
		"25MS":     `25MS has an unknown unit "MS": expected a duration like 25ms, 1.5s or 500us`,
		"25Mbit/s": "25Mbit/s has the wrong unit: expected a duration like 25ms, 1.5s or 500us, not a rate",
		"5%":       "5% has the wrong unit: expected a duration like 25ms, 1.5s or 500us, not a percentage",
		"":         "empty value: expected a duration like 25ms, 1.5s or 500us",
		"ms":       "ms is not a number with a unit: expected a duration like 25ms, 1.5s or 500us",
		"1e3ms":    `1e3ms has an unknown unit "e3ms": expected a duration like 25ms, 1.5s or 500us`,
		"9999999h": "9999999h out of range: expected a duration under 2562047h",
	}
	for in, want := range bad {
		_, err := ParseDuration(in)
		require.EqualError(t, err, want, in)
	}
}

func TestParseRate(t *testing.T) {
	good := map[string]int64{
		"5Mbit/s": 5_000_000, "500kbit/s": 500_000, "1Gbit/s": 1_000_000_000, "64000bit/s": 64_000,
		"3.2Mbit/s": 3_200_000, "1.5kbit/s": 1500, "0bit/s": 0, "0.0000015Mbit/s": 2,
	}
	for in, want := range good {
		got, err := ParseRate(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	bad := map[string]string{
		"5":             "5 is missing a unit: expected a rate like 5Mbit/s, 500kbit/s or 1Gbit/s",
		"5Mbps":         `5Mbps has an unknown unit "Mbps": expected a rate like 5Mbit/s, 500kbit/s or 1Gbit/s`,
		"5MB/s":         `5MB/s has an unknown unit "MB/s": expected a rate like 5Mbit/s, 500kbit/s or 1Gbit/s`,
		"5Kbit/s":       `5Kbit/s has an unknown unit "Kbit/s": expected a rate like 5Mbit/s, 500kbit/s or 1Gbit/s`,
		"5ms":           "5ms has the wrong unit: expected a rate like 5Mbit/s, 500kbit/s or 1Gbit/s, not a duration",
		"5MB":           "5MB has the wrong unit: expected a rate like 5Mbit/s, 500kbit/s or 1Gbit/s, not a size",
		"-5Mbit/s":      "-5Mbit/s out of range: expected a rate of 0bit/s or more, like 5Mbit/s, 500kbit/s or 1Gbit/s",
		"0.4bit/s":      "0.4bit/s out of range: expected at least 1bit/s",
		"1e9Gbit/s":     `1e9Gbit/s has an unknown unit "e9Gbit/s": expected a rate like 5Mbit/s, 500kbit/s or 1Gbit/s`,
		"9999999Gbit/s": "9999999Gbit/s out of range: expected a rate under 1000000Gbit/s",
	}
	for in, want := range bad {
		_, err := ParseRate(in)
		require.EqualError(t, err, want, in)
	}
}

func TestParsePercent(t *testing.T) {
	good := map[string]float64{"1%": 0.01, "0.1%": percentOf(0.1), "100%": 1, "0%": 0, "25%": 0.25, "99.9%": percentOf(99.9)}
	for in, want := range good {
		got, err := ParsePercent(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	bad := map[string]string{
		"120%":   "120% out of range: expected a percentage from 0% to 100%",
		"-1%":    "-1% out of range: expected a percentage from 0% to 100%",
		"1":      "1 is missing a unit: expected a percentage like 1% or 0.1%",
		"0.01":   "0.01 is missing a unit: expected a percentage like 1% or 0.1%",
		"1 %":    "1 % has a space before its unit: expected a percentage like 1% or 0.1%",
		"1pct":   `1pct has an unknown unit "pct": expected a percentage like 1% or 0.1%`,
		"100.1%": "100.1% out of range: expected a percentage from 0% to 100%",
	}
	for in, want := range bad {
		_, err := ParsePercent(in)
		require.EqualError(t, err, want, in)
	}
}

func TestParseBytes(t *testing.T) {
	good := map[string]int{"28B": 28, "256KB": 256 * 1024, "256KiB": 256 * 1024, "1MB": 1 << 20, "1MiB": 1 << 20,
		"1.5KB": 1536, "2GB": 2 << 30, "0B": 0}
	for in, want := range good {
		got, err := ParseBytes(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	bad := map[string]string{
		"256":    "256 is missing a unit: expected a size like 256KB, 1MB or 28B",
		"256kb":  `256kb has an unknown unit "kb": expected a size like 256KB, 1MB or 28B`,
		"0.5B":   "0.5B is not a whole number of bytes: expected a size like 256KB, 1MB or 28B",
		"-1KB":   "-1KB out of range: expected a size of 0B or more, like 256KB, 1MB or 28B",
		"2000GB": "2000GB out of range: expected a size of at most 1024GB",
		"1s":     "1s has the wrong unit: expected a size like 256KB, 1MB or 28B, not a duration",
	}
	for in, want := range bad {
		_, err := ParseBytes(in)
		require.EqualError(t, err, want, in)
	}
}

func TestParseHzAndPPM(t *testing.T) {
	hz, err := ParseHz("59.94Hz")
	require.NoError(t, err)
	require.Equal(t, 59.94, hz)
	_, err = ParseHz("60")
	require.EqualError(t, err, "60 is missing a unit: expected a frequency like 60Hz")
	_, err = ParseHz("60hz")
	require.EqualError(t, err, `60hz has an unknown unit "hz": expected a frequency like 60Hz`)
	_, err = ParseHz("-60Hz")
	require.EqualError(t, err, "-60Hz out of range: expected a frequency of 0Hz or more, like 60Hz")

	ppm, err := ParsePPM("-20ppm")
	require.NoError(t, err)
	require.Equal(t, -20.0, ppm)
	_, err = ParsePPM("50")
	require.EqualError(t, err, "50 is missing a unit: expected a clock drift like 50ppm or -20ppm")
	_, err = ParsePPM("50Hz")
	require.EqualError(t, err, "50Hz has the wrong unit: expected a clock drift like 50ppm or -20ppm, not a frequency")
}

func TestFormatReadsBack(t *testing.T) {
	for _, d := range []time.Duration{0, 1, 250 * time.Microsecond, 25 * time.Millisecond, 1500 * time.Millisecond,
		time.Minute, 90 * time.Second, -time.Second, 3*time.Hour + 1} {
		back, err := ParseDuration(FormatDuration(d))
		require.NoError(t, err)
		require.Equal(t, d, back, FormatDuration(d))
	}
	require.Equal(t, "1500ms", FormatDuration(1500*time.Millisecond))
	require.Equal(t, "2m", FormatDuration(2*time.Minute))

	for _, r := range []int64{0, 1, 64_000, 3_200_000, 1_000_000_000, 1_234_567} {
		back, err := ParseRate(FormatRate(r))
		require.NoError(t, err)
		require.Equal(t, r, back, FormatRate(r))
	}
	require.Equal(t, "3200kbit/s", FormatRate(3_200_000))

	for _, s := range []string{"7%", "0.1%", "99.9%", "33.333%", "0.0001%", "100%", "0%"} {
		f, err := ParsePercent(s)
		require.NoError(t, err)
		require.Equal(t, s, FormatPercent(f), "shortest form of %s", s)
	}

	for _, n := range []int{0, 28, 1536, 256 * 1024, 1 << 20, 3 << 30} {
		back, err := ParseBytes(FormatBytes(n))
		require.NoError(t, err)
		require.Equal(t, n, back, FormatBytes(n))
	}
	require.Equal(t, "60Hz", FormatHz(60))
	require.Equal(t, "-20ppm", FormatPPM(-20))
}

// FuzzParseUnits: no parser panics, and what one reads, its Format writes
// back to the same value.
func FuzzParseUnits(f *testing.F) {
	for _, s := range []string{"25ms", "1m30s", "5Mbit/s", "0.1%", "150%", "256KB", "60Hz", "-20ppm", "1e3", "", "µs"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if d, err := ParseDuration(s); err == nil {
			back, err := ParseDuration(FormatDuration(d))
			require.NoError(t, err)
			require.Equal(t, d, back)
		}
		if r, err := ParseRate(s); err == nil {
			back, err := ParseRate(FormatRate(r))
			require.NoError(t, err)
			require.Equal(t, r, back)
		}
		if p, err := ParsePercent(s); err == nil {
			back, err := ParsePercent(FormatPercent(p))
			require.NoError(t, err)
			require.Equal(t, p, back)
		}
		if p, err := parseShare(s); err == nil {
			back, err := parseShare(FormatPercent(p))
			require.NoError(t, err)
			require.Equal(t, p, back)
		}
		if n, err := ParseBytes(s); err == nil {
			back, err := ParseBytes(FormatBytes(n))
			require.NoError(t, err)
			require.Equal(t, n, back)
		}
		if h, err := ParseHz(s); err == nil {
			back, err := ParseHz(FormatHz(h))
			require.NoError(t, err)
			require.Equal(t, h, back)
		}
		if p, err := ParsePPM(s); err == nil {
			back, err := ParsePPM(FormatPPM(p))
			require.NoError(t, err)
			require.Equal(t, p, back)
		}
	})
}

// percentOf is what ParsePercent makes of v%: v/100 computed at run time (a
// constant expression would be rounded once, exactly, and differ).
func percentOf(v float64) float64 { return v / 100 }

// Every ABR parameter of the format has a field by its name, and nothing
// else does: the tools that set parameters by name (compare, the sweep)
// reach exactly the keys a scenario file writes.
func TestControllerABRParametersByName(t *testing.T) {
	var c Controller
	named := 0
	for _, key := range objects["controller"] {
		d, f := c.ABRDuration(key), c.ABRShare(key)
		switch key {
		case "kind", "bitrate", "steps", "min", "max":
			if d != nil || f != nil {
				t.Errorf("%s is not an ABR rule parameter", key)
			}
			continue
		}
		if (d == nil) == (f == nil) {
			t.Errorf("%s: want exactly one of a duration or a share field", key)
			continue
		}
		named++
		if d != nil {
			*d = time.Duration(named)
		} else {
			*f = float64(named)
		}
	}
	if named != 9 {
		t.Fatalf("%d ABR parameters, want 9", named)
	}
	// Each key reached its own field: the values written are all there.
	want := Controller{Window: 1, Baseline: 2, Threshold: 3, Sustain: 4, Close: 5, Hold: 6, Decrease: 7, Increase: 8, Guard: 9}
	require.Equal(t, want, c, "fields set by name")
}
