package scenarios

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// The unit parsers read values the way people write them in scenario files:
// a number immediately followed by its unit ("25ms", "5Mbit/s", "1%",
// "256KB", "60Hz", "50ppm"). Every one refuses a bare number ("missing
// unit"), a unit of another quantity ("wrong unit") and a unit nobody
// defined ("unknown unit"), because a silently misread unit is the worst
// mistake a scenario can hide: 25 read as 25 ns instead of 25 ms is a LAN
// instead of a mobile network.
//
// Their errors are the message part of an *Error ("120% out of range:
// expected a percentage from 0% to 100%"): the loader adds file, line and
// field.

// unitKind is one quantity and the units it may be written in.
type unitKind struct {
	what    string             // "a duration"
	example string             // "25ms, 1.5s or 500us"
	units   map[string]float64 // unit -> multiplier to the base unit
}

var (
	durationUnits = unitKind{"a duration", "25ms, 1.5s or 500us", map[string]float64{
		"ns": 1, "us": 1e3, "µs": 1e3, "μs": 1e3, "ms": 1e6, "s": 1e9, "m": 60e9, "h": 3600e9}}
	rateUnits = unitKind{"a rate", "5Mbit/s, 500kbit/s or 1Gbit/s", map[string]float64{
		"bit/s": 1, "kbit/s": 1e3, "Mbit/s": 1e6, "Gbit/s": 1e9}}
	percentUnits = unitKind{"a percentage", "1% or 0.1%", map[string]float64{"%": 0.01}}
	// Bytes are binary: a "256 KB" send cap is 262144 bytes in every tool
	// the write-ups quote, so KB and KiB mean the same here.
	byteUnits = unitKind{"a size", "256KB, 1MB or 28B", map[string]float64{
		"B": 1, "KB": 1 << 10, "KiB": 1 << 10, "MB": 1 << 20, "MiB": 1 << 20, "GB": 1 << 30, "GiB": 1 << 30}}
	hzUnits  = unitKind{"a frequency", "60Hz", map[string]float64{"Hz": 1}}
	ppmUnits = unitKind{"a clock drift", "50ppm or -20ppm", map[string]float64{"ppm": 1}}

	allUnitKinds = []unitKind{durationUnits, rateUnits, percentUnits, byteUnits, hzUnits, ppmUnits}
)

// numberUnit splits "25ms" into "25" and "ms". The number is plain decimal:
// no exponent, no hexadecimal, no infinities, as people write units.
var numberUnit = regexp.MustCompile(`^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(.*)$`)

// splitUnit reads s as a number and a unit of kind k. It returns the number
// and the unit's multiplier, or an error that says what is wrong with the
// unit.
func splitUnit(s string, k unitKind) (float64, float64, error) {
	if strings.TrimSpace(s) == "" {
		return 0, 0, fmt.Errorf("empty value: expected %s like %s", k.what, k.example)
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return 0, 0, fmt.Errorf("%s is missing a unit: expected %s like %s", s, k.what, k.example)
	}
	m := numberUnit.FindStringSubmatch(s)
	if m == nil {
		return 0, 0, fmt.Errorf("%s is not a number with a unit: expected %s like %s", s, k.what, k.example)
	}
	num, unit := m[1], m[2]
	if strings.TrimSpace(unit) != unit {
		return 0, 0, fmt.Errorf("%s has a space before its unit: expected %s like %s", s, k.what, k.example)
	}
	mult, ok := k.units[unit]
	if !ok {
		for _, other := range allUnitKinds {
			if _, ok := other.units[unit]; ok {
				return 0, 0, fmt.Errorf("%s has the wrong unit: expected %s like %s, not %s", s, k.what, k.example, other.what)
			}
		}
		return 0, 0, fmt.Errorf("%s has an unknown unit %q: expected %s like %s", s, unit, k.what, k.example)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsInf(v, 0) {
		return 0, 0, fmt.Errorf("%s is not a valid number: expected %s like %s", s, k.what, k.example)
	}
	return v, mult, nil
}

// ParseDuration reads a duration: "25ms", "1.5s", "500us" (or "500µs"),
// "2m", "1h", or a sum such as "1m30s". Negative durations are returned as
// such; the fields that cannot be negative refuse them.
func ParseDuration(s string) (time.Duration, error) {
	if _, err := strconv.ParseFloat(s, 64); err != nil && strings.TrimSpace(s) != "" {
		// time.ParseDuration accepts "0" without a unit: only hand it
		// strings that have one. It also reads sums ("1m30s"), which the
		// single number-and-unit split below does not.
		if d, err := time.ParseDuration(s); err == nil {
			return d, nil
		}
	}
	v, mult, err := splitUnit(s, durationUnits)
	if err != nil {
		return 0, err
	}
	ns := v * mult
	if math.Abs(ns) >= math.MaxInt64 {
		return 0, fmt.Errorf("%s out of range: expected a duration under 2562047h", s)
	}
	return time.Duration(math.Round(ns)), nil
}

// ParseRate reads a bit rate in decimal SI units ("5Mbit/s" is 5 000 000
// bit/s, "500kbit/s", "1Gbit/s", "64000bit/s"), rounded to a whole bit per
// second. A rate is never negative; zero is left to the field to judge.
func ParseRate(s string) (int64, error) {
	v, mult, err := splitUnit(s, rateUnits)
	if err != nil {
		return 0, err
	}
	bps := math.Round(v * mult)
	switch {
	case v < 0:
		return 0, fmt.Errorf("%s out of range: expected a rate of 0bit/s or more, like %s", s, rateUnits.example)
	case bps >= 1e15:
		return 0, fmt.Errorf("%s out of range: expected a rate under 1000000Gbit/s", s)
	case bps == 0 && v != 0:
		return 0, fmt.Errorf("%s out of range: expected at least 1bit/s", s)
	}
	return int64(bps), nil
}

// ParsePercent reads a percentage ("1%", "0.1%", "100%") as a fraction in
// [0, 1]. A bare number is refused: 0.01 and 1 would both be read as "1%" by
// someone.
func ParsePercent(s string) (float64, error) {
	v, _, err := splitUnit(s, percentUnits)
	if err != nil {
		return 0, err
	}
	if v < 0 || v > 100 {
		return 0, fmt.Errorf("%s out of range: expected a percentage from 0%% to 100%%", s)
	}
	return v / 100, nil
}

// parseShare reads a percentage that may exceed 100% or be negative ("15%",
// "150%") as a fraction: a controller's increase has no upper bound, and
// its fields say themselves which range they take.
func parseShare(s string) (float64, error) {
	v, _, err := splitUnit(s, percentUnits)
	if err != nil {
		return 0, err
	}
	return v / 100, nil
}

// ParseBytes reads a size: "28B", "256KB", "1MB" (binary: KB = KiB = 1024
// bytes, MB = MiB = 1024 KB, GB = GiB). The result is a whole number of bytes.
func ParseBytes(s string) (int, error) {
	v, mult, err := splitUnit(s, byteUnits)
	if err != nil {
		return 0, err
	}
	n := v * mult
	switch {
	case v < 0:
		return 0, fmt.Errorf("%s out of range: expected a size of 0B or more, like %s", s, byteUnits.example)
	case n != math.Trunc(n):
		return 0, fmt.Errorf("%s is not a whole number of bytes: expected a size like %s", s, byteUnits.example)
	case n > 1<<40:
		return 0, fmt.Errorf("%s out of range: expected a size of at most 1024GB", s)
	}
	return int(n), nil
}

// ParseHz reads a frequency: "60Hz", "59.94Hz". It is never negative.
func ParseHz(s string) (float64, error) {
	v, _, err := splitUnit(s, hzUnits)
	if err != nil {
		return 0, err
	}
	if v < 0 {
		return 0, fmt.Errorf("%s out of range: expected a frequency of 0Hz or more, like 60Hz", s)
	}
	return v, nil
}

// ParsePPM reads a clock drift in parts per million: "50ppm", "-20ppm".
func ParsePPM(s string) (float64, error) {
	v, _, err := splitUnit(s, ppmUnits)
	if err != nil {
		return 0, err
	}
	return v, nil
}

// FormatDuration writes d in the largest unit that holds it exactly
// ("25ms", "1500ms", "2m"), so that ParseDuration gives d back.
func FormatDuration(d time.Duration) string {
	for _, u := range []struct {
		unit string
		size time.Duration
	}{{"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}, {"ms", time.Millisecond}, {"us", time.Microsecond}} {
		if d%u.size == 0 && d != 0 {
			return strconv.FormatInt(int64(d/u.size), 10) + u.unit
		}
	}
	if d == 0 {
		return "0s"
	}
	return strconv.FormatInt(int64(d), 10) + "ns"
}

// FormatRate writes bps in the largest decimal unit that holds it exactly
// ("5Mbit/s", "1500kbit/s").
func FormatRate(bps int64) string {
	for _, u := range []struct {
		unit string
		size int64
	}{{"Gbit/s", 1e9}, {"Mbit/s", 1e6}, {"kbit/s", 1e3}} {
		if bps%u.size == 0 && bps != 0 {
			return strconv.FormatInt(bps/u.size, 10) + u.unit
		}
	}
	return strconv.FormatInt(bps, 10) + "bit/s"
}

// FormatPercent writes a fraction as the shortest percentage that
// ParsePercent reads back as the same float64 ("1%", "0.1%").
func FormatPercent(f float64) string {
	// f*100 rounded to a float64 does not always divide back to f (0.07*100
	// is 7.000000000000001): look for the shortest decimal that does.
	for prec := 0; prec <= 40; prec++ {
		s := strconv.FormatFloat(f*100, 'f', prec, 64)
		if back, err := strconv.ParseFloat(s, 64); err == nil && back/100 == f {
			return s + "%"
		}
	}
	return strconv.FormatFloat(f*100, 'g', -1, 64) + "%"
}

// FormatBytes writes n in the largest binary unit that holds it exactly
// ("256KB", "1MB", "28B").
func FormatBytes(n int) string {
	for _, u := range []struct {
		unit string
		size int
	}{{"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10}} {
		if n%u.size == 0 && n != 0 {
			return strconv.Itoa(n/u.size) + u.unit
		}
	}
	return strconv.Itoa(n) + "B"
}

// FormatHz writes a frequency ("60Hz").
func FormatHz(hz float64) string { return strconv.FormatFloat(hz, 'f', -1, 64) + "Hz" }

// FormatPPM writes a clock drift ("50ppm").
func FormatPPM(ppm float64) string { return strconv.FormatFloat(ppm, 'f', -1, 64) + "ppm" }

// parseInt reads a plain whole number (a seed, a count), refusing units and
// fractions.
func parseInt(s string, what string) (int64, error) {
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		return v, nil
	} else if errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("%s out of range: expected %s", s, what)
	}
	return 0, fmt.Errorf("%s is not a whole number: expected %s", s, what)
}

// parseNumber reads a plain decimal number (a ratio, a frame rate),
// refusing units, infinities and NaN.
func parseNumber(s string, what string) (float64, error) {
	m := numberUnit.FindStringSubmatch(s)
	if m == nil || m[2] != "" {
		return 0, fmt.Errorf("%s is not a plain number: expected %s", s, what)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%s is not a valid number: expected %s", s, what)
	}
	return v, nil
}

// The typed units read one value from its YAML node (yaml.Unmarshaler, so
// that the node, and with it the line, is at hand) and write it back
// (yaml.Marshaler and String). A Scenario holds plain Go numbers; the
// loader reads a field through the unit its format tag names (units) and
// converts. Their errors are the message part of an *Error.
type (
	// Duration is a duration: "25ms", "1.5s", "1m30s".
	Duration time.Duration
	// Rate is a bit rate in bits per second: "5Mbit/s".
	Rate int64
	// Percent is a fraction from 0 to 1, written as a percentage: "1%".
	Percent float64
	// Share is a fraction that may lie outside 0-1, written as a
	// percentage: a controller's "150%" increase.
	Share float64
	// Size is a number of bytes: "256KB".
	Size int
	// Frequency is in Hz: "60Hz".
	Frequency float64
	// Drift is a clock drift in parts per million: "50ppm".
	Drift float64
)

// scalarOf returns n's text, or the error for a value that is not one.
func scalarOf(n *yaml.Node, expected string) (string, error) {
	r := resolve(n)
	if r.Kind != yaml.ScalarNode {
		return "", errors.New("expected " + expected + ", got " + describe(n))
	}
	return r.Value, nil
}

// unmarshal reads n's text with parse into *dst.
func unmarshal[T, V any](n *yaml.Node, k unitKind, parse func(string) (V, error), dst *T, conv func(V) T) error {
	s, err := scalarOf(n, k.what+" like "+k.example)
	if err != nil {
		return err
	}
	v, err := parse(s)
	if err != nil {
		return err
	}
	*dst = conv(v)
	return nil
}

// UnmarshalYAML reads a duration.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	return unmarshal(n, durationUnits, ParseDuration, d, func(v time.Duration) Duration { return Duration(v) })
}

// UnmarshalYAML reads a rate.
func (r *Rate) UnmarshalYAML(n *yaml.Node) error {
	return unmarshal(n, rateUnits, ParseRate, r, func(v int64) Rate { return Rate(v) })
}

// UnmarshalYAML reads a percentage from 0% to 100%.
func (p *Percent) UnmarshalYAML(n *yaml.Node) error {
	return unmarshal(n, percentUnits, ParsePercent, p, func(v float64) Percent { return Percent(v) })
}

// UnmarshalYAML reads a percentage of any size.
func (p *Share) UnmarshalYAML(n *yaml.Node) error {
	return unmarshal(n, percentUnits, parseShare, p, func(v float64) Share { return Share(v) })
}

// UnmarshalYAML reads a size.
func (s *Size) UnmarshalYAML(n *yaml.Node) error {
	return unmarshal(n, byteUnits, ParseBytes, s, func(v int) Size { return Size(v) })
}

// UnmarshalYAML reads a frequency.
func (f *Frequency) UnmarshalYAML(n *yaml.Node) error {
	return unmarshal(n, hzUnits, ParseHz, f, func(v float64) Frequency { return Frequency(v) })
}

// UnmarshalYAML reads a clock drift.
func (d *Drift) UnmarshalYAML(n *yaml.Node) error {
	// "a drift like 50ppm" is the message's own wording, shorter than the
	// unit's description.
	return unmarshal(n, unitKind{"a drift", "50ppm", ppmUnits.units}, ParsePPM, d, func(v float64) Drift { return Drift(v) })
}

// String writes the duration as a scenario does ("25ms").
func (d Duration) String() string { return FormatDuration(time.Duration(d)) }

// String writes the rate as a scenario does ("5Mbit/s").
func (r Rate) String() string { return FormatRate(int64(r)) }

// String writes the fraction as a percentage ("1%").
func (p Percent) String() string { return FormatPercent(float64(p)) }

// String writes the fraction as a percentage ("150%").
func (p Share) String() string { return FormatPercent(float64(p)) }

// String writes the size as a scenario does ("256KB").
func (s Size) String() string { return FormatBytes(int(s)) }

// String writes the frequency ("60Hz").
func (f Frequency) String() string { return FormatHz(float64(f)) }

// String writes the drift ("50ppm").
func (d Drift) String() string { return FormatPPM(float64(d)) }

// MarshalYAML writes the duration in its unit.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// MarshalYAML writes the rate in its unit.
func (r Rate) MarshalYAML() (any, error) { return r.String(), nil }

// MarshalYAML writes the percentage.
func (p Percent) MarshalYAML() (any, error) { return p.String(), nil }

// MarshalYAML writes the percentage.
func (p Share) MarshalYAML() (any, error) { return p.String(), nil }

// MarshalYAML writes the size in its unit.
func (s Size) MarshalYAML() (any, error) { return s.String(), nil }

// MarshalYAML writes the frequency in its unit.
func (f Frequency) MarshalYAML() (any, error) { return f.String(), nil }

// MarshalYAML writes the drift in its unit.
func (d Drift) MarshalYAML() (any, error) { return d.String(), nil }

// unitSpec is how the loader reads a unit named in a format tag: its type,
// and the message for a value out of the field's range ("" when in range),
// given the value as written and as a number.
type unitSpec struct {
	typ   reflect.Type
	check func(f field, s string, v float64) string
}

// aboveZero refuses 0 for a positive field: what says the range.
func aboveZero(what string) func(f field, s string, v float64) string {
	return func(f field, s string, v float64) string {
		if f.positive && v == 0 {
			return s + " out of range: expected " + what + f.hint
		}
		return ""
	}
}

// shareIn checks a controller percentage against its range; the hint is
// added when the value is 0%, which a Scenario reads as "the default".
func shareIn(r shareRange) func(f field, s string, v float64) string {
	return func(f field, s string, v float64) string {
		if r.in(v) {
			return ""
		}
		hint := f.hint
		if v != 0 {
			hint = ""
		}
		return s + " out of range: expected " + r.what + hint
	}
}

var units = map[string]unitSpec{
	"duration": {reflect.TypeFor[Duration](), func(f field, s string, v float64) string {
		if v < 0 {
			return s + " out of range: expected a duration of 0s or more"
		}
		return aboveZero("a duration above 0s")(f, s, v)
	}},
	"signed":   {reflect.TypeFor[Duration](), func(field, string, float64) string { return "" }},
	"percent":  {reflect.TypeFor[Percent](), aboveZero("a percentage above 0%")},
	"decrease": {reflect.TypeFor[Share](), shareIn(decreaseRange)},
	"increase": {reflect.TypeFor[Share](), shareIn(increaseRange)},
	"rate": {reflect.TypeFor[Rate](), func(f field, s string, v float64) string {
		f.positive = true // a rate of nothing is never meant
		return aboveZero("a rate above 0bit/s")(f, s, v)
	}},
	"size": {reflect.TypeFor[Size](), aboveZero("a size above 0B")},
	"hz": {reflect.TypeFor[Frequency](), func(f field, s string, v float64) string {
		if !(v > 0 && v <= maxRefresh) {
			return s + " out of range: expected a frequency above 0Hz and at most 1000Hz" + f.hint
		}
		return ""
	}},
	"ppm": {reflect.TypeFor[Drift](), func(field, string, float64) string { return "" }},
}
