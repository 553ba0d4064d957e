// Package labtest runs scenario files as Go tests, from any module: a
// team's repository imports it and runs its own scenario folder, with its
// own defaults, in its own go test, each scenario a subtest judged as lab
// test judges it (an expectation not met fails the subtest with its file
// and line, measure, window, bound and value).
//
//	func TestScenarios(t *testing.T) {
//		labtest.Run(t, labtest.Options{}, "scenarios")
//	}
//
// The scenarios load as lab test loads them (package filetest): each
// folder's defaults.yaml, else the library's; traces beside the files;
// every mistake reported at once, with its file and line. Each session
// runs in a testing/synctest bubble of its own, in virtual time.
package labtest

import (
	"errors"
	"fmt"
	"testing"
	"testing/cryptotest"
	"testing/synctest"
	"time"

	"github.com/nuvirahub/latencylab/lab"
	"github.com/nuvirahub/latencylab/lab/filetest"
	"github.com/nuvirahub/latencylab/scenarios"
)

// Options say how Run runs the files.
type Options struct {
	// Defaults is the defaults file of every scenario; empty is each
	// folder's defaults.yaml, else the library's.
	Defaults string
	// Seeds runs every scenario at each seed, a subtest each (seed-N);
	// none runs each at its own.
	Seeds []uint64
}

// Outcome is one session: its result, or why it did not run.
type Outcome = filetest.Outcome

// Run loads the scenario files and folders named (paths relative to the
// test's working folder, its package's) and runs each as a subtest of t,
// named after the scenario, failing it on an expectation not met, one
// after another. A file that does not load fails t with every mistake, and
// nothing runs. It returns the sessions that ran, in the files' order
// (then the seeds'). t must not be parallel (see runOne).
func Run(t *testing.T, o Options, paths ...string) []Outcome {
	t.Helper()
	scs, err := filetest.Load(paths, o.Defaults)
	if err != nil {
		t.Fatalf("the scenario files do not load: nothing ran\n%v", err)
	}
	var out []Outcome
	for _, sc := range scs {
		t.Run(sc.Name, func(t *testing.T) {
			if len(o.Seeds) == 0 {
				out = append(out, runOne(t, sc, sc.Seed))
				return
			}
			for _, seed := range o.Seeds {
				t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
					out = append(out, runOne(t, sc, seed))
				})
			}
		})
	}
	return out
}

// runOne runs one scenario file at a seed in a bubble and judges it.
// crypto/rand (QUIC's connection IDs, TLS) is seeded by the seed, as in
// the lab's worker processes, so that two runs of a seed agree as far as
// the process's scheduling allows; testing/cryptotest does so for the
// whole process, which is why the sessions run one after another.
func runOne(t *testing.T, base *scenarios.Scenario, seed uint64) Outcome {
	sc := *base
	sc.Seed = seed
	o := Outcome{Scenario: sc.Name, File: sc.File, Seed: seed}
	cryptotest.SetGlobalRandom(t, seed)
	began := time.Now()
	synctest.Test(t, func(t *testing.T) {
		res, err := lab.Run(t.Context(), &sc)
		o.Result = res
		if err != nil {
			o.Err, o.Skipped = err.Error(), errors.Is(err, lab.ErrSharedAbsent)
		}
	})
	o.Wall = time.Since(began)
	v := filetest.Judge(o)
	switch v.Status {
	case filetest.Skipped:
		t.Skip(v.Why)
	case filetest.Error:
		t.Fatalf("%s (%s, seed %d): %s", sc.Name, sc.File, seed, v.Why)
	}
	for _, m := range v.Failed() {
		t.Errorf("expectation not met: %s", m)
	}
	t.Logf("%s seed %d: %s", sc.Name, seed, filetest.Headline(o.Result))
	return o
}
