package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/nuvirahub/latencylab/internal/docregion"
	"github.com/nuvirahub/latencylab/internal/evidence"
	"github.com/nuvirahub/latencylab/internal/needs"
	"github.com/nuvirahub/latencylab/scenarios"
)

// The project's record of the findings loads, and the library cites only
// findings it holds.
func TestFindingsRecord(t *testing.T) {
	fs, err := Findings()
	require.NoError(t, err)
	ids := map[string]bool{}
	for _, f := range fs {
		ids[f.ID] = true
	}
	require.True(t, ids["N1"] && ids["N20"] && ids["E1"] && ids["E14"], "N1-N20 and E1-E14")
	lib, err := scenarios.Library()
	require.NoError(t, err)
	for _, sc := range lib {
		for _, id := range sc.Findings {
			require.True(t, ids[id], "%s cites %s, which %s does not hold", sc.File, id, FindingsFile)
		}
	}
}

// recordRow is a finding as lab/findings.yaml writes it, read without the
// lab's own types, so that the table's tests do not check the table's
// builder against itself.
type recordRow struct {
	ID, Class, Documented, Figures, Why string
	Evidence                            [][2]string // lab, command
}

// readRecord parses lab/findings.yaml as plain YAML.
func readRecord(t *testing.T) []recordRow {
	root, err := moduleRoot()
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(root, FindingsFile))
	require.NoError(t, err)
	var raw []map[string]any
	require.NoError(t, yaml.Unmarshal(data, &raw))
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	var out []recordRow
	for _, m := range raw {
		r := recordRow{ID: str(m, "id"), Class: str(m, "class"), Documented: str(m, "documented"), Figures: str(m, "figures"), Why: str(m, "why")}
		evs, _ := m["evidence"].([]any)
		for _, e := range evs {
			em, _ := e.(map[string]any)
			r.Evidence = append(r.Evidence, [2]string{str(em, "lab"), str(em, "command")})
		}
		out = append(out, r)
	}
	require.NotEmpty(t, out)
	return out
}

// tableRows splits a Markdown table's finding rows into their cells,
// unescaping "\|", by ID, in order.
func tableRows(t *testing.T, table string) (ids []string, rows map[string][]string) {
	rows = map[string][]string{}
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "| N") && !strings.HasPrefix(line, "| E") {
			continue
		}
		var cells []string
		var cell strings.Builder
		for i := 0; i < len(line); i++ {
			switch {
			case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
				cell.WriteByte('|')
				i++
			case line[i] == '|':
				cells = append(cells, strings.TrimSpace(cell.String()))
				cell.Reset()
			default:
				cell.WriteByte(line[i])
			}
		}
		require.Len(t, cells, 7, "a row of six cells: %s", line) // empty before the first |
		ids = append(ids, cells[1])
		rows[cells[1]] = cells[1:]
	}
	return ids, rows
}

// classCountsOf is the counts line as the record's classes give it.
func classCountsOf(record []recordRow) string {
	n := map[string]int{}
	for _, r := range record {
		n[r.Class]++
	}
	return fmt.Sprintf("%d findings: %d reproduced, %d calibrated, %d partly, %d not reproduced.",
		len(record), n["reproduced"], n["calibrated"], n["partly"], n["not reproduced"])
}

// checkTable checks a reproduction table against the record, read on its
// own, the library's citations and the codec lab's reference rows: one row
// per finding in the record's order, the record's class, figure (or the
// behaviour, where there is none), why and evidence, every citing
// scenario's part and command, and the class counts.
func checkTable(t *testing.T, table string, record []recordRow, lib []*scenarios.Scenario, codecIDs []string) {
	t.Helper()
	ids, rows := tableRows(t, table)
	var want []string
	for _, r := range record {
		want = append(want, r.ID)
	}
	require.Equal(t, want, ids, "the table's rows, in the record's order")
	require.Contains(t, table, classCountsOf(record))
	for _, r := range record {
		row := rows[r.ID]
		require.Equal(t, r.Class, row[1], "%s's class", r.ID)
		documented := r.Figures
		if documented == "—" {
			documented = r.Documented
		}
		require.Equal(t, documented, row[2], "%s's documented figure", r.ID)
		require.Equal(t, r.Why, row[4], "%s's why", r.ID)
		lab, cmds := strings.Split(row[3], "<br>"), row[5]
		for _, e := range r.Evidence {
			require.Contains(t, lab, e[0], "%s's evidence", r.ID)
			require.Contains(t, cmds, "`"+e[1]+"`", "%s's evidence's command", r.ID)
		}
		parts := len(r.Evidence)
		for _, sc := range lib {
			if !slices.Contains(sc.Findings, r.ID) {
				continue
			}
			parts++
			prefix := fmt.Sprintf("%s (viewer policy %s): ", sc.Name, policyOf(sc))
			require.True(t, slices.ContainsFunc(lab, func(s string) bool { return strings.HasPrefix(s, prefix) }), "%s: the part of %s, which cites it under its policy", r.ID, sc.Name)
			require.Contains(t, cmds, fmt.Sprintf("`go test ./lab -run 'Library/%s$' -v`", sc.Name), "%s: %s's command", r.ID, sc.Name)
		}
		if slices.Contains(codecIDs, r.ID) {
			parts++
			require.True(t, slices.ContainsFunc(lab, func(s string) bool { return strings.HasPrefix(s, "codec lab, reference run of ") }), "%s: the codec lab's row", r.ID)
		}
		require.Positive(t, parts, "%s: nothing measures it", r.ID)
		require.Len(t, lab, parts, "%s: the lab column's parts", r.ID)
	}
}

// codecReferenceIDs reads the finding IDs of the codec lab's reference
// rows from its JSON, on its own.
func codecReferenceIDs(t *testing.T) []string {
	root, err := moduleRoot()
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(root, CodecReference))
	require.NoError(t, err)
	var run struct {
		Rows []struct {
			ID string `json:"id"`
		} `json:"reproduction"`
	}
	require.NoError(t, json.Unmarshal(data, &run))
	var ids []string
	for _, r := range run.Rows {
		ids = append(ids, r.ID)
	}
	require.NotEmpty(t, ids)
	return ids
}

// The table the suite writes holds every finding of the record, as the
// record says it, with something in the lab column: checked against the
// record read on its own, so that a mistake of the table's builder fails.
func TestEveryFindingIsMeasuredSomewhere(t *testing.T) {
	rep, err := LoadReproduction()
	require.NoError(t, err)
	lib, err := scenarios.Library()
	require.NoError(t, err)
	var entries []SuiteEntry
	for _, sc := range lib {
		entries = append(entries, SuiteEntry{Scenario: sc, Skipped: true, Err: errors.New("not run"), Command: fmt.Sprintf("go test ./lab -run 'Library/%s$' -v", sc.Name)})
	}
	table := rep.Table(entries)
	require.NotContains(t, table, "nothing measures it")
	checkTable(t, table, readRecord(t), lib, codecReferenceIDs(t))
}

// The table written in docs/reproduction.md is the record's as it stands:
// a finding, class, why or evidence changed in lab/findings.yaml fails
// here until make readme writes the table again.
func TestWrittenReproductionTableFollowsTheRecord(t *testing.T) {
	root, err := moduleRoot()
	require.NoError(t, err)
	doc, err := os.ReadFile(filepath.Join(root, docregion.Reproduction.File))
	require.NoError(t, err)
	i, j, err := docregion.Reproduction.Find(string(doc))
	require.NoError(t, err)
	lib, err := scenarios.Library()
	require.NoError(t, err)
	checkTable(t, string(doc[i:j]), readRecord(t), lib, codecReferenceIDs(t))
}

// The record holds the write-ups' findings: where the shared folder is
// present, exactly the IDs of FINDINGS.md, in its order.
func TestRecordHoldsTheWriteUpsFindings(t *testing.T) {
	path, err := SharedFindingsPath()
	require.NoError(t, err)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		needs.Missing(t, needs.Shared, "%s is absent (the shared folder lives beside the repository): nothing to compare the record with", path)
	}
	require.NoError(t, err)
	var shared []string
	for _, m := range regexp.MustCompile(`(?m)^\|\s*([NE]\d+)\s*\|`).FindAllStringSubmatch(string(data), -1) {
		shared = append(shared, m[1])
	}
	var ours []string
	for _, r := range readRecord(t) {
		ours = append(ours, r.ID)
	}
	require.Equal(t, shared, ours)
}

// The record's mistakes are reported by file, finding and field.
func TestFindingsRecordErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"- {id: N1, documented: d, figures: f, class: maybe, why: w}", `finding 1 (N1): class "maybe": expected one of`},
		{"- {id: N1, documented: d, figures: f, class: calibrated, why: w}\n- {id: N1, documented: d, figures: f, class: calibrated, why: w}", "id N1 appears twice"},
		{"- {id: X1, documented: d, figures: f, class: calibrated, why: w}", `id "X1": expected N or E and a number`},
		{"- {id: N1, documented: d, class: calibrated, why: w}", "documented, figures and why are required"},
		{"- {id: N1, documented: d, figures: f, class: calibrated, why: w, colour: red}", "field colour not found"},
	} {
		_, err := parseFindingsYAML("f.yaml", []byte(tc.yaml))
		require.ErrorContains(t, err, tc.want)
		require.ErrorContains(t, err, "f.yaml")
	}
}

// Where the shared folder is present, the record holds the same IDs, in
// the same order, with the same figures as the write-ups' table.
func TestFindingsMatchTheSharedTable(t *testing.T) {
	path, err := SharedFindingsPath()
	require.NoError(t, err)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		needs.Missing(t, needs.Shared, "%s is absent (the shared folder lives beside the repository): nothing to compare the record with", path)
	}
	require.NoError(t, err)
	defer f.Close()
	shared, err := ParseSharedFindings(f)
	require.NoError(t, err)
	ours, err := Findings()
	require.NoError(t, err)
	require.Len(t, ours, len(shared))
	for i, s := range shared {
		require.Equal(t, s.ID, ours[i].ID, "finding %d", i+1)
		require.Equal(t, s.Figures, ours[i].Figures, "%s's figures", s.ID)
	}
}

// E9's evidence is the method the codec lab's reference run records.
func TestE9EvidenceIsTheReferenceRunsMethod(t *testing.T) {
	root, err := moduleRoot()
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(root, CodecReference))
	require.NoError(t, err)
	var run struct {
		Iters  int `json:"iters"`
		Warmup int `json:"warmup"`
	}
	require.NoError(t, json.Unmarshal(data, &run))
	p := evidence.For(t, "E9", "go run ./cmd/lab codecs -iters 200 -warmup 20")
	p.Figure(`made with (\d+) timed encodes after (\d+) warm-up`, float64(run.Iters), float64(run.Warmup))
	p.Done()
}

// Every evidence string that holds a figure is pinned by the test that
// measures it: some test of the repository names it to evidence.For, which
// then fails when a figure parts from the measurement or is claimed by
// nothing.
func TestEveryEvidenceFigureIsPinned(t *testing.T) {
	root, err := moduleRoot()
	require.NoError(t, err)
	items, err := evidence.Read(root)
	require.NoError(t, err)
	var tests strings.Builder
	require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, "_test.go") {
			b, err := os.ReadFile(path)
			tests.Write(b)
			return err
		}
		return nil
	}))
	pinned := 0
	for _, it := range items {
		if len(evidence.Numbers(it.Lab)) == 0 {
			continue
		}
		call := evidence.Call(it.ID, it.Command)
		if !strings.Contains(tests.String(), call) {
			t.Errorf("%s: %s's evidence %q holds figures no test pins: the test %q runs should call %s", FindingsFile, it.ID, it.Lab, it.Command, call)
			continue
		}
		pinned++
	}
	require.Positive(t, pinned)
	t.Logf("%d evidence strings hold figures, each pinned by its test", pinned)
}
