package exact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/scenarios"
)

// shared is the package's one Runner, built and compiled on first use
// (the compiled guest is cached in the user's cache folder, as in use).
var shared = sync.OnceValues(func() (*Runner, error) {
	var log strings.Builder
	r, err := Open(context.Background(), Options{Root: filepath.Join("..", ".."), Log: &log})
	if err == nil {
		fmt.Print(log.String())
	}
	return r, err
})

func open(t *testing.T) *Runner {
	t.Helper()
	r, err := shared()
	require.NoError(t, err)
	return r
}

func library(t *testing.T, name string) *scenarios.Scenario {
	t.Helper()
	lib, err := scenarios.Library()
	require.NoError(t, err)
	for _, sc := range lib {
		if sc.Name == name {
			c := *sc
			c.Expect = nil // they belong to the full length
			return &c
		}
	}
	t.Fatalf("no scenario %s in the library", name)
	return nil
}

// The property the package is for: the same lossy session, run in several
// instances side by side, gives the same result to the byte; another seed
// gives another. (Natively, this session has two outcomes: see the
// package comment.)
func TestSameSeedSameResult(t *testing.T) {
	r := open(t)
	sc := library(t, "abr-lossy")
	sc.Duration = 10 * time.Second
	sc.Seed = 2
	results := make([][]byte, 3)
	errs := make(chan error, len(results))
	for i := range results {
		go func() {
			res, err := r.Run(context.Background(), sc)
			if err == nil && res.Err != "" {
				err = errors.New(res.Err)
			}
			if err == nil {
				results[i], err = json.Marshal(res.Result)
			}
			errs <- err
		}()
	}
	for range results {
		require.NoError(t, <-errs)
	}
	require.Greater(t, len(results[0]), 10000, "a 10 s session has frames")
	require.Len(t, r.Guest(), 16)
	for i := 1; i < len(results); i++ {
		require.Equal(t, string(results[0]), string(results[i]), "instance %d", i)
	}
	other := *sc
	other.Seed = 3
	res, err := r.Run(context.Background(), &other)
	require.NoError(t, err)
	b, err := json.Marshal(res.Result)
	require.NoError(t, err)
	require.NotEqual(t, string(results[0]), string(b), "another seed, another session")
}

// The guest reads the host's files where the host has them: a shared
// trace through the read-only mount, relative to the module's root. A
// session that fails inside the instance comes back as the result's error,
// and a guest that cannot be built says why.
func TestFilesAndErrors(t *testing.T) {
	r := open(t)
	sc := library(t, "cellular-verizon-lte")
	sc.Duration = 3 * time.Second
	sc.Expect = nil
	res, err := r.Run(context.Background(), sc)
	require.NoError(t, err)
	if res.Skipped {
		t.Logf("the trace part is skipped: %s", res.Err)
	} else {
		require.Empty(t, res.Err)
		require.Positive(t, res.Result.Summary.Displayed)
	}

	sc.Network.Down[0].Trace = "shared:no-such-trace.down"
	res, err = r.Run(context.Background(), sc)
	require.NoError(t, err)
	require.Contains(t, res.Err, "no-such-trace.down does not exist")
	require.True(t, res.Skipped)

	_, err = Build(context.Background(), t.TempDir())
	require.ErrorContains(t, err, "building the guest")
}
