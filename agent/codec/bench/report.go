package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gonum.org/v1/plot"
)

// ReportSchema names the version of the JSON a run writes. A reader meeting
// another version refuses it instead of guessing.
const ReportSchema = "latencylab.codecs/v1"

// Report is one run of the benchmark: its method, every figure, and the
// rows of the write-up it reproduces.
type Report struct {
	Schema string `json:"schema"`
	// Iters and Warmup are the timed and uncounted encodes per case.
	Iters  int `json:"iters"`
	Warmup int `json:"warmup"`
	// Started is when the run began; Wall how long it took.
	Started time.Time     `json:"started"`
	Wall    time.Duration `json:"wall_ns"`
	// Machine describes where the times were taken (OS/arch, CPUs, Go).
	Machine  string           `json:"machine"`
	Cases    []Case           `json:"cases"`
	Codecs   []string         `json:"codecs"`
	Results  []Result         `json:"results"`
	Detector []DetectorResult `json:"detector"`
	Rows     []Row            `json:"reproduction"`
}

// Files a report folder holds.
const (
	ReportJSON      = "codecs.json"
	ReportMarkdown  = "codecs.md"
	KeyframesPlot   = "keyframes.png"
	PframeBytesPlot = "pframes-bytes.png"
	PframeTimePlot  = "pframes-time.png"
)

// Markdown is the report as people read it: method, the reproduction rows,
// the full table and the detector's cost.
func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Codec lab: %d timed encodes per case after %d warm-up ones\n\n", r.Iters, r.Warmup)
	fmt.Fprintf(&b, "Median encode time with the dirty-tile detector inside every codec's time; bytes of a fresh encoder; every output decoded and compared with its source. %s, %s, run %s, wall %s. Method: `agent/codec/bench/bench.go`.\n\n",
		r.Machine, r.Schema, r.Started.UTC().Format(time.RFC3339), r.Wall.Round(time.Second))
	b.WriteString("## Findings\n\n")
	b.WriteString(RowsTable(r.Rows))
	fmt.Fprintf(&b, "\n## Plots\n\n![keyframes](%s)\n\n![P-frame bytes](%s)\n\n![P-frame time](%s)\n", KeyframesPlot, PframeBytesPlot, PframeTimePlot)
	b.WriteString("\n## Every case\n\n")
	cases := r.Cases
	var cds []Codec
	for _, name := range r.Codecs {
		cds = append(cds, Codec{Name: name})
	}
	b.WriteString(Table(cases, cds, r.Results))
	b.WriteString("\n## The dirty-tile detector\n\nThe detector alone against `bytes.Equal` over the same frames (which stops at the first difference, so only the static row compares like with like).\n\n| case | dirty tiles | detector | bytes.Equal | ratio |\n|---|---|---|---|---|\n")
	for _, d := range r.Detector {
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %.2fx |\n", d.Case, d.Dirty, us(d.Detect), us(d.BytesEqual), d.Ratio())
	}
	return b.String()
}

// RowsTable is the reproduction rows as a Markdown table.
func RowsTable(rows []Row) string {
	var b strings.Builder
	b.WriteString("| ID | documented | lab |\n|---|---|---|\n")
	for _, row := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", row.ID, esc(row.Documented), esc(row.Lab))
	}
	return b.String()
}

func esc(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

// WriteReport writes a report folder: the JSON, the Markdown and the plots.
func WriteReport(dir string, r *Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, ReportJSON), append(js, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, ReportMarkdown), []byte(r.Markdown()), 0o644); err != nil {
		return err
	}
	key, err := keyframePlots(r)
	if err != nil {
		return err
	}
	pb, err := pframePlots(r, bytesMetric)
	if err != nil {
		return err
	}
	pt, err := pframePlots(r, timeMetric)
	if err != nil {
		return err
	}
	for name, grid := range map[string][][]*plot.Plot{KeyframesPlot: key, PframeBytesPlot: pb, PframeTimePlot: pt} {
		var buf bytes.Buffer
		if err := writeGrid(&buf, grid); err != nil {
			return fmt.Errorf("plot %s: %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// ErrSchema is returned for a report of another version.
var ErrSchema = errors.New("bench: unsupported report schema")

// ReadReport reads a report's JSON back, refusing another schema.
func ReadReport(path string) (*Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.Schema != ReportSchema {
		return nil, fmt.Errorf("%s: %w: %q (this lab reads %q)", path, ErrSchema, r.Schema, ReportSchema)
	}
	return &r, nil
}
