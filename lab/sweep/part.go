package sweep

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/nuvirahub/latencylab/lab/sweep/grid"
)

// PartSchema names the JSON form of Part. A change that an older reader
// would misread (a field renamed, a unit changed) takes a new version;
// adding a field does not.
const PartSchema = "latencylab.sweep/v1"

// Part is what one shard of a sweep measured: the whole grid (so that
// Merge can tell parts of different sweeps apart), which shard, and per
// point of the shard, per scenario and seed, the measurements. Durations
// are whole nanoseconds in fields ending in _ns.
type Part struct {
	// Schema is PartSchema.
	Schema string    `json:"schema"`
	Grid   grid.Grid `json:"grid"`
	Shard  ShardID   `json:"shard"`
	// Wall is how long the shard's sessions took; Virtual the virtual
	// time they ran, summed; Parallel how many ran at once.
	Wall     time.Duration `json:"wall_ns"`
	Virtual  time.Duration `json:"virtual_ns"`
	Parallel int           `json:"parallel"`
	// Exact says the sessions ran exact (lab/exact): each a function
	// of its scenario and seed only. Merge refuses to mix exact parts
	// with others, whose sessions can differ from run to run.
	Exact bool `json:"exact"`
	// Guest names the exact sessions' program (exact.Runner.Guest): parts
	// of one sweep must come from the same one, or their sessions could
	// differ. Empty for native parts.
	Guest string `json:"guest,omitempty"`
	// Points are the shard's points, in the grid's order.
	Points []PointResult `json:"points"`

	// File is where the part was read from, for Merge's errors.
	File string `json:"-"`
}

// ShardID is a shard: the I-th of N, I from 1.
type ShardID struct {
	I int `json:"i"`
	N int `json:"n"`
}

// String writes the shard as the -shard flag takes it: "2/3".
func (s ShardID) String() string { return fmt.Sprintf("%d/%d", s.I, s.N) }

// PointResult is one point's sessions: every scenario of the grid in its
// order, and for each every seed.
type PointResult struct {
	Point grid.Point  `json:"point"`
	Runs  []RunResult `json:"runs"`
}

// RunResult is one session of a point: a scenario under one seed.
type RunResult struct {
	Scenario string `json:"scenario"`
	Seed     uint64 `json:"seed"`
	// Ran is the virtual time the session ran; Wall the wall time it took.
	Ran  time.Duration `json:"ran_ns"`
	Wall time.Duration `json:"wall_ns"`
	// Error is why the session failed; it then has no measurements.
	Error string `json:"error,omitempty"`
	// Measures are Measures by name, in the catalogue's units (seconds,
	// bits/s, a fraction, a count); Missing says why one could not be
	// taken (no frame displayed after the warm-up, say).
	Measures map[string]float64 `json:"measures"`
	Missing  map[string]string  `json:"missing,omitempty"`
}

// PartName is the file name of shard i of n: "sweep-part-2of3.json".
func PartName(i, n int) string { return fmt.Sprintf("sweep-part-%dof%d.json", i, n) }

// WritePart writes the part into dir as PartName and returns the path.
func WritePart(dir string, p *Part) (string, error) {
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	file := filepath.Join(dir, PartName(p.Shard.I, p.Shard.N))
	return file, os.WriteFile(file, append(data, '\n'), 0o644)
}

// ReadPart reads a part file, refusing one of another schema: a reader
// of v1 would misread v2's fields.
func ReadPart(file string) (*Part, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var p Part
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("%s: not a sweep part: %w", file, err)
	}
	if p.Schema != PartSchema {
		return nil, fmt.Errorf("%s: schema %q: expected %q, a part written by lab sweep", file, p.Schema, PartSchema)
	}
	p.File = file
	return &p, nil
}
