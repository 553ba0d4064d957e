package sweep

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nuvirahub/latencylab/lab/sweep/grid"
)

// Sentinels of Merge's errors, for errors.Is.
var (
	// ErrGrid: the parts belong to different sweeps.
	ErrGrid = errors.New("sweep: parts of different grids")
	// ErrCoverage: the parts miss points of the grid, or hold some twice.
	ErrCoverage = errors.New("sweep: the parts do not cover the grid exactly once")
)

// Table is a whole sweep, merged: a row per point of the grid, in its
// order, and what the parts say about how it ran.
type Table struct {
	Grid  grid.Grid
	Rows  []Row
	Parts []PartInfo
	// Exact says every session ran exact (Part.Exact).
	Exact bool
}

// PartInfo is how one part ran, for the speed figures.
type PartInfo struct {
	File     string
	Shard    ShardID
	Wall     time.Duration
	Virtual  time.Duration
	Parallel int
	Sessions int
}

// Row is one point: its sessions and their aggregates.
type Row struct {
	Point grid.Point
	// Runs are the point's sessions in the grid's order: scenario, then
	// seed.
	Runs []RunResult
	// Values aggregate Measures over the point's sessions: the mean of
	// every session's figure (the mean of the per-scenario medians for
	// latency.median, and so on), which weighs each scenario alike
	// whatever its length, except freezes, summed over the sessions.
	Values map[string]float64
	// Missing says why a value is absent: a session failed or could not
	// take that measurement; a mean of the others would misrepresent the
	// point.
	Missing map[string]string
}

// Merge checks that the parts belong to one grid and cover each of its
// points exactly once, and returns the table. The table depends only on
// the sessions' measurements and the grid's order, so any sharding of a
// grid merges to the same table as the unsharded run.
func Merge(parts []*Part) (*Table, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("%w: no parts", ErrCoverage)
	}
	first := parts[0]
	want, err := json.Marshal(first.Grid)
	if err != nil {
		return nil, err
	}
	for _, p := range parts[1:] {
		if got, _ := json.Marshal(p.Grid); string(got) != string(want) {
			return nil, fmt.Errorf("%w: %s and %s: %s", ErrGrid, name(first), name(p), gridDiff(first.Grid, p.Grid))
		}
	}
	for _, p := range parts[1:] {
		if p.Exact != first.Exact {
			return nil, fmt.Errorf("%w: %s ran %s, %s ran %s: run every shard the same way (-exact)",
				ErrGrid, name(first), mode(first.Exact), name(p), mode(p.Exact))
		}
		if p.Guest != first.Guest {
			return nil, fmt.Errorf("%w: %s ran guest %s, %s ran guest %s: exact sessions from other source or another Go give other results; run every shard from the same commit and Go",
				ErrGrid, name(first), first.Guest, name(p), p.Guest)
		}
	}
	g := first.Grid
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name(first), err)
	}

	var errs []error
	shards := map[ShardID]*Part{}
	for _, p := range parts {
		if other, dup := shards[p.Shard]; dup {
			errs = append(errs, fmt.Errorf("%s and %s are both shard %s", name(other), name(p), p.Shard))
		}
		shards[p.Shard] = p
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrCoverage, errors.Join(errs...))
	}

	points := g.Points()
	index := map[string]int{}
	for i, pt := range points {
		index[pt.ID] = i
	}
	found := make([]*PointResult, len(points))
	from := make([]*Part, len(points))
	var dups []string
	perPoint := len(g.Scenarios) * max(1, len(g.Seeds))
	for _, p := range parts {
		for k := range p.Points {
			pr := &p.Points[k]
			i, ok := index[pr.Point.ID]
			switch {
			case !ok:
				errs = append(errs, fmt.Errorf("%s: point %s is not a point of the grid", name(p), pr.Point.ID))
				continue
			case pr.Point != points[i]:
				errs = append(errs, fmt.Errorf("%s: point %s: its values or index differ from the grid's", name(p), pr.Point.ID))
				continue
			case len(pr.Runs) != perPoint:
				errs = append(errs, fmt.Errorf("%s: point %s has %d sessions: expected %d (%d scenarios x %d seeds)",
					name(p), pr.Point.ID, len(pr.Runs), perPoint, len(g.Scenarios), max(1, len(g.Seeds))))
				continue
			case found[i] != nil:
				dups = append(dups, fmt.Sprintf("%s (in %s and %s)", pr.Point.ID, name(from[i]), name(p)))
				continue
			}
			found[i], from[i] = pr, p
		}
	}
	if len(dups) > 0 {
		errs = append(errs, fmt.Errorf("%d points twice: %s", len(dups), list(dups)))
	}
	if missing := missingPoints(points, found, parts); missing != "" {
		errs = append(errs, errors.New(missing))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrCoverage, errors.Join(errs...))
	}

	// Every point runs the same scenarios and seeds in the same order;
	// a part whose sessions differ was made by another program.
	ref := found[0].Runs
	for i, pr := range found {
		for j, r := range pr.Runs {
			if r.Scenario != ref[j].Scenario || r.Seed != ref[j].Seed {
				return nil, fmt.Errorf("%w: %s: point %s runs %s seed %d where point %s runs %s seed %d",
					ErrGrid, name(from[i]), pr.Point.ID, r.Scenario, r.Seed, found[0].Point.ID, ref[j].Scenario, ref[j].Seed)
			}
		}
	}

	t := &Table{Grid: g, Exact: first.Exact}
	for _, p := range parts {
		info := PartInfo{File: p.File, Shard: p.Shard, Wall: p.Wall, Virtual: p.Virtual, Parallel: p.Parallel}
		for _, pr := range p.Points {
			info.Sessions += len(pr.Runs)
		}
		t.Parts = append(t.Parts, info)
	}
	slices.SortFunc(t.Parts, func(a, b PartInfo) int { return a.Shard.I - b.Shard.I })
	for _, pr := range found {
		t.Rows = append(t.Rows, aggregate(*pr))
	}
	return t, nil
}

// mode names how a part's sessions ran.
func mode(exact bool) string {
	if exact {
		return "exact sessions"
	}
	return "native sessions"
}

// name is how errors name a part: its file, or its shard when it was not
// read from one.
func name(p *Part) string {
	if p.File != "" {
		return p.File
	}
	return "part " + p.Shard.String()
}

// list writes up to five items and how many more there are.
func list(items []string) string {
	const most = 5
	if len(items) <= most {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:most], ", "), len(items)-most)
}

// missingPoints describes the points no part holds, grouped by the shard
// that should have held them when the parts agree on the shard count, so
// that the message says which CI job or pod to rerun.
func missingPoints(points []grid.Point, found []*PointResult, parts []*Part) string {
	var ids []string
	n := parts[0].Shard.N
	for _, p := range parts {
		if p.Shard.N != n {
			n = 0
		}
	}
	byShard := map[int][]string{}
	for i, pr := range found {
		if pr == nil {
			ids = append(ids, points[i].ID)
			if n > 0 {
				s := grid.ShardOf(i, n)
				byShard[s] = append(byShard[s], points[i].ID)
			}
		}
	}
	if len(ids) == 0 {
		return ""
	}
	if n == 0 {
		return fmt.Sprintf("%d of %d points missing: %s", len(ids), len(points), list(ids))
	}
	var shards []int
	for s := range byShard {
		shards = append(shards, s)
	}
	slices.Sort(shards)
	var groups []string
	for _, s := range shards {
		groups = append(groups, fmt.Sprintf("shard %d/%d's %s (%s)", s, n, plural(len(byShard[s]), "point"), list(byShard[s])))
	}
	return fmt.Sprintf("%d of %d points missing: %s", len(ids), len(points), strings.Join(groups, "; "))
}

// gridDiff names the fields in which two grids differ.
func gridDiff(a, b grid.Grid) string {
	fields := func(g grid.Grid) map[string]string {
		data, _ := json.Marshal(g)
		var m map[string]json.RawMessage
		_ = json.Unmarshal(data, &m)
		out := map[string]string{}
		for k, v := range m {
			out[k] = string(v)
		}
		return out
	}
	fa, fb := fields(a), fields(b)
	var keys []string
	for k := range fa {
		keys = append(keys, k)
	}
	for k := range fb {
		if _, ok := fa[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var diffs []string
	for _, k := range keys {
		if fa[k] != fb[k] {
			diffs = append(diffs, fmt.Sprintf("%s %s vs %s", k, orNone(fa[k]), orNone(fb[k])))
		}
	}
	return "the grids differ in " + strings.Join(diffs, "; ")
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// aggregate computes a row's values from its sessions, in their order,
// so that the same sessions give the same bits.
func aggregate(pr PointResult) Row {
	row := Row{Point: pr.Point, Runs: pr.Runs, Values: map[string]float64{}, Missing: map[string]string{}}
	for _, m := range Measures {
		var sum float64
		for _, r := range pr.Runs {
			v, ok := r.Measures[m]
			switch {
			case r.Error != "":
				row.Missing[m] = fmt.Sprintf("%s seed %d failed: %s", r.Scenario, r.Seed, r.Error)
			case !ok:
				row.Missing[m] = fmt.Sprintf("%s seed %d: %s", r.Scenario, r.Seed, r.Missing[m])
			}
			if _, bad := row.Missing[m]; bad {
				break
			}
			sum += v
		}
		if _, bad := row.Missing[m]; bad {
			continue
		}
		if m == "freezes" {
			row.Values[m] = sum
		} else {
			row.Values[m] = sum / float64(len(pr.Runs))
		}
	}
	return row
}

// Wall is the parts' wall time, summed: the machine time the sweep took
// (the elapsed time too when the parts ran one after the other).
func (t *Table) Wall() time.Duration {
	var d time.Duration
	for _, p := range t.Parts {
		d += p.Wall
	}
	return d
}

// Elapsed is the longest part's wall time: the sweep's elapsed time when
// its parts ran at once on machines of their own.
func (t *Table) Elapsed() time.Duration {
	var d time.Duration
	for _, p := range t.Parts {
		d = max(d, p.Wall)
	}
	return d
}

// Virtual is the virtual time the sessions ran, summed.
func (t *Table) Virtual() time.Duration {
	var d time.Duration
	for _, p := range t.Parts {
		d += p.Virtual
	}
	return d
}

// Sessions counts the sessions of the sweep.
func (t *Table) Sessions() int {
	n := 0
	for _, r := range t.Rows {
		n += len(r.Runs)
	}
	return n
}

// Speed is the scenario seconds run per wall second of machine time
// (Virtual / Wall); 0 when no time was recorded.
func (t *Table) Speed() float64 {
	if t.Wall() <= 0 {
		return 0
	}
	return t.Virtual().Seconds() / t.Wall().Seconds()
}
