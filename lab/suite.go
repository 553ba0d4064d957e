package lab

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/scenarios"
	"github.com/nuvirahub/latencylab/viewer"
)

// SuiteEntry is one scenario's outcome in a suite run.
type SuiteEntry struct {
	// Scenario is what ran; Result what it measured (nil if it could not
	// run); Err why not; Skipped is set when it needs ../shared and that
	// folder is absent.
	Scenario *scenarios.Scenario
	Result   *result.Run
	Err      error
	Skipped  bool
	// Wall is the wall time the run took.
	Wall time.Duration
	// Command reproduces it.
	Command string
}

// Status is "pass", "FAIL", "error" or "skipped".
func (e SuiteEntry) Status() string {
	switch {
	case e.Skipped:
		return "skipped"
	case e.Err != nil:
		return "error"
	case e.Result != nil && e.Result.Passed():
		return "pass"
	}
	return "FAIL"
}

// msText formats a duration in milliseconds for tables.
func msText(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/1e6) }

// SummaryTable is the suite's table in Markdown: one row per scenario with
// its headline figures and its checks.
func SummaryTable(entries []SuiteEntry) string {
	var b strings.Builder
	b.WriteString("| scenario | findings | status | latency median | p95 | max | freezes | fps | wall |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, e := range entries {
		row := []string{e.Scenario.Name, strings.Join(e.Scenario.Findings, " "), e.Status()}
		if r := e.Result; r != nil {
			s := r.Summary
			row = append(row, msText(s.Latency.Median), msText(s.Latency.P95), msText(s.Latency.Max),
				fmt.Sprint(len(s.Freezes)), fmt.Sprintf("%.1f", s.FPS))
		} else {
			why := "—"
			if e.Err != nil {
				why = e.Err.Error()
			}
			row = append(row, why, "", "", "", "")
		}
		row = append(row, fmt.Sprintf("%.2f s", e.Wall.Seconds()))
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
	return b.String()
}

// ReproductionTable is the full reproduction table, made from a suite run:
// for every finding its class, the documented figure, what the library's
// scenarios that cite it measured against their expectations, each under
// its viewer policy, the evidence
// measured outside them, the codec lab's reference rows (codec, by finding
// ID, from the run of codecDate), why the class is what it is, and the
// commands that show it.
func ReproductionTable(findings []Finding, entries []SuiteEntry, codec map[string]string, codecDate string) string {
	var b strings.Builder
	b.WriteString("| ID | class | documented | lab (scenario: measured, bound; other evidence) | why | command |\n|---|---|---|---|---|---|\n")
	for _, f := range findings {
		var lab, cmds []string
		for _, e := range entries {
			if !slices.Contains(e.Scenario.Findings, f.ID) {
				continue
			}
			cmds = append(cmds, "`"+e.Command+"`")
			switch {
			case e.Skipped:
				lab = append(lab, fmt.Sprintf("%s (viewer policy %s): skipped (%v)", e.Scenario.Name, policyOf(e.Scenario), e.Err))
			case e.Result == nil:
				lab = append(lab, fmt.Sprintf("%s (viewer policy %s): error: %v", e.Scenario.Name, policyOf(e.Scenario), e.Err))
			default:
				var cs []string
				for _, c := range e.Result.Checks {
					mark := ""
					if !c.Pass {
						mark = " **FAIL**"
					}
					cs = append(cs, c.String()+mark)
				}
				lab = append(lab, fmt.Sprintf("%s (viewer policy %s): %s", e.Scenario.Name, policyOf(e.Scenario), strings.Join(cs, "; ")))
			}
		}
		for _, ev := range f.Evidence {
			lab = append(lab, ev.Lab)
			cmds = append(cmds, "`"+ev.Command+"`")
		}
		if row, ok := codec[f.ID]; ok {
			lab = append(lab, fmt.Sprintf("codec lab, reference run of %s (%s): %s", codecDate, CodecReference, row))
			cmds = append(cmds, "`go run ./cmd/lab codecs`")
		}
		if len(lab) == 0 {
			lab = append(lab, "— nothing measures it")
		}
		documented := f.Figures
		if documented == "" || documented == "—" {
			documented = f.Documented
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", f.ID, f.Class, escape(documented),
			escape(strings.Join(lab, "<br>")), escape(f.Why), escape(strings.Join(slices.Compact(cmds), "<br>")))
	}
	return b.String()
}

// ClassCounts says how many findings are in each class, and which, for
// the README: "34 findings: 8 reproduced, ...", then the IDs of each.
func ClassCounts(findings []Finding) string {
	var parts, lists []string
	for _, c := range Classes {
		var ids []string
		for _, f := range findings {
			if f.Class == c {
				ids = append(ids, f.ID)
			}
		}
		parts = append(parts, fmt.Sprintf("%d %s", len(ids), c))
		if len(ids) > 0 {
			lists = append(lists, fmt.Sprintf("- **%s**: %s", c, strings.Join(ids, ", ")))
		}
	}
	return fmt.Sprintf("%d findings: %s.\n\n%s\n", len(findings), strings.Join(parts, ", "), strings.Join(lists, "\n"))
}

// policyOf names the viewer policy a scenario runs under (viewer.policy,
// drop when it says none): a finding that holds under one policy may not
// under another (docs/policies.md).
func policyOf(sc *scenarios.Scenario) string {
	return cmp.Or(sc.Viewer.Policy, string(viewer.PolicyDrop))
}

func escape(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

// Reproduction is what the reproduction table is made of besides a suite
// run: the findings and the codec lab's reference rows.
type Reproduction struct {
	Findings []Finding
	// Codec holds the codec lab's reference rows by finding ID, from the
	// run of CodecDate.
	Codec     map[string]string
	CodecDate string
}

// LoadReproduction reads the findings and the codec lab's reference run
// from the repository.
func LoadReproduction() (*Reproduction, error) {
	fs, err := Findings()
	if err != nil {
		return nil, err
	}
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	codec, date, err := codecRows(root)
	if err != nil {
		return nil, err
	}
	return &Reproduction{Findings: fs, Codec: codec, CodecDate: date}, nil
}

// Table is the full reproduction table from a suite run's entries, with
// the class counts at its top.
func (r *Reproduction) Table(entries []SuiteEntry) string {
	return ClassCounts(r.Findings) + "\n" + ReproductionTable(r.Findings, entries, r.Codec, r.CodecDate)
}

// WriteSuite writes a result folder: a JSON file per scenario, summary.md
// and, when rep is given, reproduction.md.
func WriteSuite(dir string, entries []SuiteEntry, rep *Reproduction) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, e := range entries {
		if e.Result == nil {
			continue
		}
		data, err := json.MarshalIndent(e.Result, "", " ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, e.Scenario.Name+".json"), data, 0o644); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "summary.md"), []byte(SummaryTable(entries)), 0o644); err != nil {
		return err
	}
	if rep != nil {
		return os.WriteFile(filepath.Join(dir, "reproduction.md"), []byte(rep.Table(entries)), 0o644)
	}
	return nil
}
