package tune

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/nuvirahub/latencylab/lab/exact"
	"github.com/nuvirahub/latencylab/lab/sweep"
	"github.com/nuvirahub/latencylab/lab/sweep/grid"
	"github.com/nuvirahub/latencylab/scenarios"
)

// Run runs the tune in dir to its end on this machine: each pending
// step's grid as one unsharded sweep (sweep.RunShard on t, every core),
// its part written where a cluster's shards would write theirs, then
// Tell. A tune interrupted between steps goes on where it stopped. o's
// Exact is opened here when the settings ask for exact sessions.
func Run(t *testing.T, dir string, o sweep.RunOptions, log io.Writer) (Status, error) {
	t.Helper()
	s, err := loadSettings(dir)
	if err != nil {
		return Status{}, err
	}
	if s.Exact && o.Exact == nil {
		r, err := exact.Open(t.Context(), exact.Options{Root: o.Root, Log: log})
		if err != nil {
			return Status{}, err
		}
		defer r.Close(context.Background())
		o.Exact = r
	}
	for {
		st, err := ReadStatus(dir)
		if err != nil || st.Pending == "" {
			return st, err
		}
		g, err := grid.Load(st.Grid)
		if err != nil {
			return st, err
		}
		began := time.Now()
		part, err := sweep.RunShard(t, g, 1, 1, o)
		if err != nil {
			return st, err
		}
		if _, err := sweep.WritePart(filepath.Join(dir, PendingDir, PartsDir), part); err != nil {
			return st, err
		}
		sessions := len(part.Points) * len(g.Scenarios) * max(1, len(g.Seeds))
		st, err = Tell(dir)
		if err != nil {
			return st, err
		}
		fmt.Fprintf(log, "tune: step done (%d sessions in %.1f s); %s\n", sessions, time.Since(began).Seconds(), st.Note)
	}
}

// DefaultScenarios is the default training set: the library's scenarios
// of the abr, rmcat and cellular groups that run the product's ABR (no
// switch restoring an old behaviour) and whose bitrate is not scripted.
func DefaultScenarios() ([]string, error) {
	lib, err := scenarios.Library()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, sc := range lib {
		inSet := slices.ContainsFunc(sc.Groups, func(g string) bool { return g == "abr" || g == "rmcat" || g == "cellular" })
		if inSet && sc.Switches == (scenarios.Switches{}) && sc.Controller.Kind != "steps" {
			out = append(out, sc.Name)
		}
	}
	return out, nil
}
