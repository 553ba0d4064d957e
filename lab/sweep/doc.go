// Package sweep owns the ABR parameter sweep of the reports: a
// grid (package grid) over the ABR's parameters (finding N10: threshold, decrease,
// increase, hold, and the sustain and close of N10/N14), run over a set of
// scenarios, measured per point and scenario, and summed up in a table and
// a Pareto plot of latency against bitrate and quality.
//
// A large sweep spreads over machines: each machine runs one shard of the
// points (grid.Shard) and writes a part file (Part, schema PartSchema); Merge
// checks that the parts belong to one grid and cover it exactly once, and
// gives the same Table as one unsharded run, because every figure of the
// table is computed from the per-session measurements the parts record,
// in the grid's order, never from the order in which the parts arrived.
//
// The sessions need testing/synctest bubbles, so they run under go test:
// RunShard takes the *testing.T of the job entry point
// (lab/jobs/sweep_job_test.go, built with the "jobs" tag), which
// `lab sweep` and `make sweep` start. Everything else here (grids, shards,
// parts, merging, the report) is plain code, tested by go test ./...
package sweep
