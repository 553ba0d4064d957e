package reports

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/nuvirahub/latencylab/internal/schemaver"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/reports/stats"
	"github.com/nuvirahub/latencylab/scenarios"
)

// BaselineSchema names the JSON form of Baseline.
const BaselineSchema = "latencylab.baseline/v1"

// Quantiles is how many quantiles of a run's latency distribution a
// baseline keeps: 200 keep the median and the 95th percentile to within
// half a percentile of the full distribution, in about 2 KB a run, where
// the full result of a 20 s run takes hundreds.
const Quantiles = 200

// Baseline is what the nightly compares a scenario's new runs with: the
// compact evidence of its runs under one configuration, one per seed,
// committed in testdata/baselines/<scenario>.json.
type Baseline struct {
	// Schema is BaselineSchema.
	Schema string `json:"schema"`
	// Scenario is the scenario's name.
	Scenario string `json:"scenario"`
	// Fingerprint identifies the scenario as it ran (see Fingerprint): a
	// report says when the scenario has changed since its baseline, since
	// then a difference may be the file's, not the code's.
	Fingerprint string `json:"scenario_sha256"`
	// Variant is the configuration the runs were made under.
	Variant string `json:"variant"`
	// Created is when the runs were made; Commit git describe of the
	// source they were made from, when known.
	Created time.Time `json:"created"`
	Commit  string    `json:"commit,omitempty"`
	// Runs are the runs' evidence, by seed.
	Runs []Evidence `json:"runs"`
}

// Evidence is one run in a few kilobytes: its headline figures and its
// latency distribution as Quantiles quantiles.
type Evidence struct {
	Seed uint64 `json:"seed"`
	// Ran is how long the session ran.
	Ran time.Duration `json:"ran_ns"`
	// Frames and Displayed count the frames sent and displayed; FPS is
	// frames displayed per second; Freezes counts the freezes of
	// result.Summary.
	Frames    int     `json:"frames"`
	Displayed int     `json:"displayed"`
	FPS       float64 `json:"fps"`
	Freezes   int     `json:"freezes"`
	// LatencyMedian, LatencyP95 and LatencyMax are the run's own figures
	// (result.Summary), from every displayed frame.
	LatencyMedian time.Duration `json:"latency_median_ns"`
	LatencyP95    time.Duration `json:"latency_p95_ns"`
	LatencyMax    time.Duration `json:"latency_max_ns"`
	// BitrateMean is the mean bitrate of the video sent.
	BitrateMean float64 `json:"bitrate_mean_bps"`
	// Latency is the true capture-to-display latency of the displayed
	// frames as Quantiles quantiles at (i+0.5)/Quantiles (all of them,
	// sorted, when fewer were displayed).
	Latency []time.Duration `json:"latency_quantiles_ns"`
}

// NewEvidence condenses a result.
func NewEvidence(r *result.Run) Evidence {
	s := r.Summary
	var lat []float64
	for _, f := range r.Frames {
		// The summary's window is [0, Ran): a frame displayed after the
		// end of an interrupted run is not in its figures either.
		if f.WasDisplayed() && f.Displayed < r.Ran {
			lat = append(lat, float64(f.Latency))
		}
	}
	e := Evidence{
		Seed: r.Seed, Ran: r.Ran, Frames: s.Frames, Displayed: s.Displayed, FPS: s.FPS,
		Freezes: len(s.Freezes), LatencyMedian: s.Latency.Median, LatencyP95: s.Latency.P95,
		LatencyMax: s.Latency.Max, BitrateMean: s.BitrateMean, Latency: []time.Duration{},
	}
	for _, v := range stats.Downsample(lat, Quantiles) {
		e.Latency = append(e.Latency, time.Duration(v))
	}
	return e
}

// Fingerprint identifies what a scenario makes a session do: a hash of
// its YAML with what does not change the session left out (seed, which
// every run sets; expectations; description, findings, groups, file).
//
// A trace beside a user's file is named from the file's folder, as the
// file names it: the loader writes its path absolute, and a team's
// checkout sits at another path on each machine (its CI's, a colleague's),
// where the same scenario must keep its fingerprint. The folder is the
// file's as seen from the working folder, which is the one the file was
// loaded from.
func Fingerprint(sc *scenarios.Scenario) string {
	c := *sc
	c.Seed, c.Expect, c.Description, c.Findings, c.Groups, c.File = 0, nil, "", nil, nil, ""
	data, err := yaml.Marshal(&c)
	if err != nil {
		// MarshalYAML writes any valid scenario; a hash of the error
		// still changes when the scenario does.
		data = []byte(err.Error())
	}
	if sc.File != "" {
		if dir, err := filepath.Abs(filepath.Dir(sc.File)); err == nil {
			data = bytes.ReplaceAll(data, []byte(dir+string(filepath.Separator)), nil)
		}
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

// ParseBaseline reads a baseline's JSON; name is used in errors.
func ParseBaseline(name string, data []byte) (*Baseline, error) {
	var b Baseline
	if err := schemaver.Decode(name, data, BaselineSchema, &b); err != nil {
		return nil, err
	}
	if b.Scenario == "" {
		return nil, fmt.Errorf("%s: baseline without a scenario name", name)
	}
	return &b, nil
}

// ReadBaselines reads every baseline of dir (<scenario>.json), by
// scenario. A missing dir is no baselines, not an error: the first
// nightly has nothing to compare with.
func ReadBaselines(dir string) (map[string]*Baseline, error) {
	out := map[string]*Baseline{}
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		if _, err := os.Stat(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	for _, path := range names {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		b, err := ParseBaseline(path, data)
		if err != nil {
			return nil, err
		}
		if want := strings.TrimSuffix(filepath.Base(path), ".json"); b.Scenario != want {
			return nil, fmt.Errorf("%s: baseline of scenario %q in the file of %q", path, b.Scenario, want)
		}
		out[b.Scenario] = b
	}
	return out, nil
}

// WriteBaselines writes each baseline to dir/<scenario>.json, its runs in
// seed order. With prune it also removes the baselines of dir that are not
// among them (a scenario renamed or deleted), so that dir holds exactly
// the baselines accepted: only a run of the whole library may prune, or
// accepting one group would drop every other's. It returns the bytes
// written.
func WriteBaselines(dir string, baselines []*Baseline, prune bool) (int64, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	keep := map[string]bool{}
	var total int64
	for _, b := range baselines {
		data, err := encodeBaseline(b)
		if err != nil {
			return total, err
		}
		path := filepath.Join(dir, b.Scenario+".json")
		if err := schemaver.WriteFile(path, data); err != nil {
			return total, err
		}
		keep[filepath.Base(path)] = true
		total += int64(len(data))
	}
	if !prune {
		return total, nil
	}
	old, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return total, err
	}
	for _, path := range old {
		if !keep[filepath.Base(path)] {
			if err := os.Remove(path); err != nil {
				return total, err
			}
		}
	}
	return total, nil
}

// encodeBaseline writes a baseline indented, except that each run is one
// line: 200 quantiles a line each would make a file of thousands of lines
// where a review wants to see which runs changed.
func encodeBaseline(b *Baseline) ([]byte, error) {
	b.Schema = BaselineSchema
	slices.SortFunc(b.Runs, func(x, y Evidence) int { return compareUint(x.Seed, y.Seed) })
	head := *b
	head.Runs = nil
	data, err := json.MarshalIndent(head, "", " ")
	if err != nil {
		return nil, err
	}
	// The head's last field is "runs": null; the runs replace the null.
	data, ok := bytes.CutSuffix(data, []byte("null\n}"))
	if !ok {
		return nil, errors.New("reports: baseline head does not end with its runs")
	}
	data = append(data, "[\n"...)
	for i, r := range b.Runs {
		line, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		data = append(data, "  "...)
		data = append(data, line...)
		if i < len(b.Runs)-1 {
			data = append(data, ',')
		}
		data = append(data, '\n')
	}
	return append(data, " ]\n}\n"...), nil
}

func compareUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
