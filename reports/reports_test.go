package reports

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/internal/schemaver"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/scenarios"
)

// newResult makes a small result whose displayed frames have the given
// latencies, 1/60 s apart.
func newResult(seed uint64, lat ...time.Duration) *result.Run {
	r := &result.Run{Schema: result.Version, Scenario: "s", Seed: seed, Duration: 10 * time.Second, Ran: 10 * time.Second}
	for i, l := range lat {
		at := time.Duration(i+1) * time.Second / 60
		r.Frames = append(r.Frames, result.FrameRecord{Seq: uint64(i), Captured: at, Displayed: at + l, Latency: l})
	}
	r.Summary = result.Summary{Frames: len(lat), Displayed: len(lat), FPS: float64(len(lat)) / 10}
	return r
}

func TestSuiteAndResultRoundTrip(t *testing.T) {
	dir := t.TempDir()
	s := &Suite{Label: "as-written", Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Commit: "abc",
		Seeds: []uint64{1, 2}, Config: map[string]string{"switches.old_capture_first": "true"},
		Runs: []*result.Run{newResult(1, 10*time.Millisecond), newResult(2, 12*time.Millisecond)}}
	path := filepath.Join(dir, "suite.json")
	require.NoError(t, WriteSuite(path, s))
	got, err := ReadSuite(path)
	require.NoError(t, err)
	require.Equal(t, SuiteSchema, got.Schema)
	require.Equal(t, s, got)

	rp := filepath.Join(dir, "one.json")
	require.NoError(t, result.Write(rp, s.Runs[0]))
	r, err := result.Read(rp)
	require.NoError(t, err)
	require.Equal(t, s.Runs[0], r)

	bad := *s.Runs[0]
	bad.Schema = "latencylab.result/v0"
	require.ErrorContains(t, result.Write(rp, &bad), "this lab writes")
}

// Files of another schema are refused, each with a message that names the
// file, what it is and what this lab reads.
func TestReadersRefuseOtherSchemas(t *testing.T) {
	for _, c := range []struct{ data, want string }{
		{`{"schema": "latencylab.suite/v2", "runs": []}`, `f.json: schema "latencylab.suite/v2" (this lab reads "latencylab.suite/v1"): written by a newer lab`},
		{`{"schema": "latencylab.suite/v0"}`, `f.json: schema "latencylab.suite/v0" (this lab reads "latencylab.suite/v1"): written by an older lab`},
		{`{"schema": "latencylab.suite/v10"}`, `written by a newer lab`},
		{`{"runs": []}`, `f.json: schema "" (this lab reads "latencylab.suite/v1"): no schema field`},
		{`{"schema": "latencylab.result/v1"}`, `another kind of file`},
		{`{"schema": "latencylab.suite/v1", "runs": [{"schema": "latencylab.result/v2"}]}`, `f.json: runs[0]: schema "latencylab.result/v2" (this lab reads "latencylab.result/v1")`},
	} {
		_, err := ParseSuite("f.json", []byte(c.data))
		require.ErrorIs(t, err, schemaver.ErrSchema, c.data)
		require.ErrorContains(t, err, c.want)
		var se *schemaver.SchemaError
		require.True(t, errors.As(err, &se))
	}
	_, err := result.Parse("r.json", []byte(`{"schema": "latencylab.result/v2"}`))
	require.EqualError(t, err, `r.json: schema "latencylab.result/v2" (this lab reads "latencylab.result/v1"): written by a newer lab; read it with that version`)
	_, err = ParseBaseline("b.json", []byte(`{"schema": "latencylab.baseline/v0", "scenario": "x"}`))
	require.ErrorIs(t, err, schemaver.ErrSchema)
	_, err = ParseSuite("f.json", []byte(`{"schema": `))
	require.ErrorContains(t, err, "f.json: unexpected end of JSON input")
	require.NotErrorIs(t, err, schemaver.ErrSchema)
	_, err = result.Parse("r.json", []byte(`{"schema": "latencylab.result/v1", "seed": "one"}`))
	require.ErrorContains(t, err, "r.json: json: cannot unmarshal")

	// A field added to v1 later is read, not refused.
	r, err := result.Parse("r.json", []byte(`{"schema": "latencylab.result/v1", "seed": 7, "new_field": 1}`))
	require.NoError(t, err)
	require.Equal(t, uint64(7), r.Seed)
}

func TestEvidence(t *testing.T) {
	var lat []time.Duration
	for i := range 600 {
		lat = append(lat, time.Duration(10+i%20)*time.Millisecond)
	}
	r := newResult(3, lat...)
	r.Summary.Freezes = []result.Interval{{From: 0, To: time.Second}}
	e := NewEvidence(r)
	require.Equal(t, uint64(3), e.Seed)
	require.Len(t, e.Latency, Quantiles)
	require.Equal(t, 10*time.Millisecond, e.Latency[0])
	require.Equal(t, 29*time.Millisecond, e.Latency[Quantiles-1])
	require.Equal(t, 1, e.Freezes)
	require.Equal(t, 60.0, e.FPS)

	// Frames displayed after the run's end are not in its figures.
	short := newResult(4, 5*time.Millisecond, 6*time.Millisecond)
	short.Ran = short.Frames[1].Displayed
	require.Equal(t, []time.Duration{5 * time.Millisecond}, NewEvidence(short).Latency)
	require.Equal(t, []time.Duration{}, NewEvidence(newResult(5)).Latency, "no frame: an empty list, not null")
}

func TestBaselinesRoundTripAndPrune(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "gone.json"), []byte(`{"schema": "latencylab.baseline/v1", "scenario": "gone"}`), 0o644))
	bs := []*Baseline{
		{Scenario: "a", Fingerprint: "f", Variant: "as-written", Created: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
			Runs: []Evidence{NewEvidence(newResult(2, time.Millisecond)), NewEvidence(newResult(1, 2*time.Millisecond))}},
		{Scenario: "b", Runs: []Evidence{NewEvidence(newResult(1))}},
	}
	n, err := WriteBaselines(dir, bs, false)
	require.NoError(t, err)
	got, err := ReadBaselines(dir)
	require.NoError(t, err)
	require.Len(t, got, 3, "without prune the old baseline stays")
	require.Equal(t, bs[0], got["a"])
	require.Equal(t, uint64(1), got["a"].Runs[0].Seed, "runs in seed order")
	data, err := os.ReadFile(filepath.Join(dir, "a.json"))
	require.NoError(t, err)
	require.Equal(t, 2, bytes.Count(data, []byte(`"seed"`)))
	require.Equal(t, 1, strings.Count(string(data), "latency_quantiles_ns\":[1000000]"), "a run is one line")
	require.Len(t, strings.Split(strings.TrimSpace(string(data)), "\n"), 11)

	n2, err := WriteBaselines(dir, bs, true)
	require.NoError(t, err)
	require.Equal(t, n, n2)
	got, err = ReadBaselines(dir)
	require.NoError(t, err)
	require.Len(t, got, 2, "pruned")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "c.json"), data, 0o644))
	_, err = ReadBaselines(dir)
	require.ErrorContains(t, err, `c.json: baseline of scenario "a" in the file of "c"`)

	none, err := ReadBaselines(filepath.Join(dir, "absent"))
	require.NoError(t, err)
	require.Empty(t, none)
}

func TestFingerprint(t *testing.T) {
	lib, err := scenarios.Library()
	require.NoError(t, err)
	sc := *lib[0]
	fp := Fingerprint(&sc)
	require.Len(t, fp, 16)
	sc.Seed, sc.Expect, sc.Description = 99, nil, "other words"
	require.Equal(t, fp, Fingerprint(&sc), "seed, expectations and words do not change the session")
	sc.Duration++
	require.NotEqual(t, fp, Fingerprint(&sc))
}

// evidence makes runs whose latencies are base + per-run offset + a spread.
func evidence(base time.Duration, offsets ...time.Duration) []Evidence {
	var out []Evidence
	for i, off := range offsets {
		var lat []time.Duration
		for j := range 300 {
			lat = append(lat, base+off+time.Duration(j%10)*100*time.Microsecond)
		}
		out = append(out, NewEvidence(newResult(uint64(i+1), lat...)))
	}
	return out
}

func verdictOf(vs []Verdict, metric string) Verdict {
	for _, v := range vs {
		if v.Metric.Name == metric {
			return v
		}
	}
	panic(metric)
}

func TestCompareRule(t *testing.T) {
	ms := time.Millisecond
	base := evidence(20*ms, 0, ms/2, ms/4)

	same := Compare("s", base, evidence(20*ms, ms/4, 0, ms/2), Options{})
	for _, v := range same {
		require.Equal(t, Unchanged, v.Outcome, "%s", v)
	}

	// 10 ms slower, well outside the runs' spread: a regression, with
	// its evidence.
	slow := Compare("s", base, evidence(30*ms, 0, ms/2, ms/4), Options{})
	v := verdictOf(slow, "latency.median")
	require.Equal(t, Regression, v.Outcome)
	require.InDelta(t, 10, v.Diff.Value, 0.01)
	require.Greater(t, v.Diff.CI.Lo, 0.0)
	require.Equal(t, 2.0, v.MinChange, "max(2 ms, 5% of 20 ms)")
	require.Equal(t, 1.0, v.KSD)
	require.Less(t, v.KSP, 1e-10)
	require.Contains(t, v.String(), "s latency.median: regression: baseline 20.")
	require.Contains(t, v.String(), "difference +10.0 ms, 95% CI [+")
	require.Contains(t, v.String(), "practical minimum 2.0 ms; KS D 1.000")

	// 1 ms slower in every run: the interval excludes 0, but 1 ms is
	// under the practical minimum.
	v = verdictOf(Compare("s", base, evidence(21*ms, 0, ms/2, ms/4), Options{}), "latency.median")
	require.False(t, v.Diff.CI.Contains(0), "%s", v)
	require.Equal(t, Unchanged, v.Outcome)

	// 10 ms faster: an improvement.
	v = verdictOf(Compare("s", base, evidence(10*ms, 0, ms/2, ms/4), Options{}), "latency.median")
	require.Equal(t, Improvement, v.Outcome)

	// A 10 ms shift hidden in runs that differ by 20 ms from each other:
	// not shown to be more than noise.
	noisy := evidence(20*ms, 0, 20*ms, 10*ms)
	v = verdictOf(Compare("s", noisy, evidence(30*ms, 0, 20*ms, 10*ms), Options{}), "latency.median")
	require.True(t, v.Diff.CI.Contains(0), "%s", v)
	require.Equal(t, Unchanged, v.Outcome)

	// Fewer frames per second is a regression of fps.
	fewer := evidence(20*ms, 0, ms/2, ms/4)
	for i := range fewer {
		fewer[i].FPS = 30
	}
	for i := range base {
		base[i].FPS = 60
	}
	v = verdictOf(Compare("s", base, fewer, Options{}), "fps")
	require.Equal(t, Regression, v.Outcome)
	require.True(t, v.KSD != v.KSD, "no KS for a per-run figure")

	v = verdictOf(Compare("s", nil, fewer, Options{}), "latency.median")
	require.Equal(t, NoData, v.Outcome)
	require.Equal(t, "no baseline runs", v.Evidence())

	// Verdicts are seeded: the same inputs, the same intervals.
	require.Equal(t, Compare("s", base, fewer, Options{})[1].Diff, Compare("s", base, fewer, Options{})[1].Diff)
}

func FuzzParseBaseline(f *testing.F) {
	b := &Baseline{Scenario: "a", Runs: []Evidence{NewEvidence(newResult(1, time.Millisecond))}}
	data, err := encodeBaseline(b)
	require.NoError(f, err)
	f.Add(data)
	f.Add([]byte(`{"schema": "latencylab.baseline/v2"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := ParseBaseline("f.json", data)
		if err != nil {
			return
		}
		again, err := encodeBaseline(b)
		require.NoError(t, err)
		b2, err := ParseBaseline("f.json", again)
		require.NoError(t, err)
		require.Equal(t, b.Scenario, b2.Scenario)
		require.Equal(t, len(b.Runs), len(b2.Runs))
	})
}

func FuzzParseSuite(f *testing.F) {
	f.Add([]byte(`{"schema": "latencylab.suite/v1", "label": "x", "runs": [{"schema": "latencylab.result/v1", "seed": 1}]}`))
	f.Add([]byte(`{"schema": "latencylab.suite/v2"}`))
	f.Add([]byte(`{"schema": "latencylab.suite/v1", "runs": [null]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSuite("f.json", data)
		if err != nil {
			require.True(t, strings.HasPrefix(err.Error(), "f.json"), err.Error())
			return
		}
		for _, r := range s.Runs {
			require.Equal(t, result.Version, r.Schema)
		}
	})
}
