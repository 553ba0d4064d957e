package sweep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"github.com/nuvirahub/latencylab/lab/exact"
)

// RunJob runs the job's shard (RunShard, the scenario files relative to
// root), writes its part into j.Out and, when the shard is the whole grid
// (1/1), merges it and writes the report beside it, so that an unsharded
// sweep needs no merge step. It tells log where the files went.
//
// Failed sessions are recorded in the part and returned as the error
// after the files are written: the job fails, and what ran is kept.
func RunJob(t *testing.T, j Job, root string, progress, log io.Writer) (*Part, error) {
	t.Helper()
	o := RunOptions{Parallel: j.Parallel, Progress: progress, Root: root}
	if j.Exact {
		r, err := exact.Open(t.Context(), exact.Options{Root: root, Log: log})
		if err != nil {
			return nil, err
		}
		defer r.Close(context.Background())
		o.Exact = r
	}
	part, err := RunShard(t, j.Grid, j.Shard.I, j.Shard.N, o)
	if err != nil {
		return nil, err
	}
	file, err := WritePart(j.Out, part)
	if err != nil {
		return part, err
	}
	sessions := 0
	var failed []error
	for _, pr := range part.Points {
		for _, r := range pr.Runs {
			sessions++
			if r.Error != "" {
				failed = append(failed, fmt.Errorf("point %s, %s seed %d: %s", pr.Point.ID, r.Scenario, r.Seed, r.Error))
			}
		}
	}
	fmt.Fprintf(log, "sweep shard %s: %d points, %d sessions, %.0f scenario seconds in %.1f wall seconds (%.0f per wall second)\n",
		part.Shard, len(part.Points), sessions, part.Virtual.Seconds(), part.Wall.Seconds(), part.Virtual.Seconds()/max(part.Wall.Seconds(), 1e-9))
	fmt.Fprintf(log, "part: %s\n", file)
	if j.Shard.N == 1 {
		table, err := Merge([]*Part{part})
		if err != nil {
			return part, err
		}
		if err := WriteReport(j.Out, table); err != nil {
			return part, err
		}
		base := filepath.Join(j.Out, ReportBase)
		fmt.Fprintf(log, "report: %s.md, %s.html; table: %s\n", base, base, filepath.Join(j.Out, TableFile))
	} else {
		fmt.Fprintf(log, "merge the %d parts with: lab sweep-merge -out DIR %s ...\n", j.Shard.N, PartName(1, j.Shard.N))
	}
	if len(failed) > 0 {
		return part, fmt.Errorf("sweep: %d of %d sessions failed: %w", len(failed), sessions, errors.Join(failed...))
	}
	return part, nil
}
