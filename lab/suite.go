package lab

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nuvirahub/latencylab/scenarios"
)

// SuiteEntry is one scenario's outcome in a suite run.
type SuiteEntry struct {
	// Scenario is what ran; Result what it measured (nil if it could not
	// run); Err why not; Skipped is set when it needs ../shared and that
	// folder is absent.
	Scenario *scenarios.Scenario
	Result   *ScenarioResult
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

// pendingIssue names the issue that will reproduce findings no scenario
// covers yet.
var pendingIssue = map[string]string{
	"N2": "8 (reports)",
}

// ReproductionTable is the README's reproduction table, made from a suite
// run: for every finding, the documented figure, what each scenario that
// reproduces it measured against its expectations, and the command that
// runs that scenario.
func ReproductionTable(findings []Finding, entries []SuiteEntry) string {
	var b strings.Builder
	b.WriteString("| ID | documented | lab (scenario: measured, bound) | command |\n|---|---|---|---|\n")
	for _, f := range findings {
		var lab, cmds []string
		for _, e := range entries {
			if !slices.Contains(e.Scenario.Findings, f.ID) {
				continue
			}
			cmds = append(cmds, "`"+e.Command+"`")
			switch {
			case e.Skipped:
				lab = append(lab, fmt.Sprintf("%s: skipped (%v)", e.Scenario.Name, e.Err))
			case e.Result == nil:
				lab = append(lab, fmt.Sprintf("%s: error: %v", e.Scenario.Name, e.Err))
			default:
				var cs []string
				for _, c := range e.Result.Checks {
					mark := ""
					if !c.Pass {
						mark = " **FAIL**"
					}
					cs = append(cs, c.String()+mark)
				}
				lab = append(lab, fmt.Sprintf("%s: %s", e.Scenario.Name, strings.Join(cs, "; ")))
			}
		}
		if len(lab) == 0 {
			switch is, ok := pendingIssue[f.ID]; {
			case ok:
				lab = append(lab, "— not yet in a scenario: issue "+is)
			case strings.HasPrefix(f.ID, "E"):
				// The codec experiments are benchmarks, not sessions.
				lab = append(lab, "— a benchmark, not a scenario: the codec lab's table below")
				cmds = append(cmds, "`go run ./cmd/lab codecs`")
			case f.ID == "N11":
				// Kernel TCP's controllers need the kernel mode (root,
				// real time), not a scenario's virtual time.
				lab = append(lab, "— kernel TCP in real time, not a scenario: the evidence rows below (`lab ccgrid`)")
				cmds = append(cmds, "`sudo go run ./cmd/lab ccgrid`")
			default:
				lab = append(lab, "— not yet in a scenario: a later issue")
			}
		}
		documented := f.Figures
		if documented == "" || documented == "—" {
			documented = f.Documented
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", f.ID, escape(documented), escape(strings.Join(lab, "<br>")), strings.Join(cmds, "<br>"))
	}
	return b.String()
}

func escape(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

// WriteSuite writes a result folder: a JSON file per scenario, summary.md
// and, when findings are given, reproduction.md.
func WriteSuite(dir string, entries []SuiteEntry, findings []Finding) error {
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
	if findings != nil {
		return os.WriteFile(filepath.Join(dir, "reproduction.md"), []byte(ReproductionTable(findings, entries)), 0o644)
	}
	return nil
}

// Reproduction markers delimit the generated table in the README.
const (
	ReproductionBegin = "<!-- reproduction:begin (generated by the suite: make suite) -->"
	ReproductionEnd   = "<!-- reproduction:end -->"
)

// ReplaceBetween replaces what lies between the two markers in doc.
func ReplaceBetween(doc, begin, end, with string) (string, error) {
	i := strings.Index(doc, begin)
	j := strings.Index(doc, end)
	if i < 0 || j < i {
		return "", fmt.Errorf("lab: markers %q ... %q not found", begin, end)
	}
	return doc[:i+len(begin)] + "\n" + with + doc[j:], nil
}
