package lab

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

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

// Every finding has something in the lab column: a scenario, evidence or
// the codec lab's reference row.
func TestEveryFindingIsMeasuredSomewhere(t *testing.T) {
	rep, err := LoadReproduction()
	require.NoError(t, err)
	lib, err := scenarios.Library()
	require.NoError(t, err)
	var entries []SuiteEntry
	for _, sc := range lib {
		entries = append(entries, SuiteEntry{Scenario: sc, Skipped: true, Err: errors.New("not run"), Command: "go test ./lab"})
	}
	table := rep.Table(entries)
	for _, f := range rep.Findings {
		require.Contains(t, table, "| "+f.ID+" | "+string(f.Class)+" |")
	}
	require.NotContains(t, table, "nothing measures it")
	counts := ClassCounts(rep.Findings)
	require.True(t, strings.HasPrefix(counts, "34 findings: "), counts)
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
