//go:build jobs

// The jobs' entry points as tests of this package's test binary, the
// source path of a checkout: lab test (native), nightly, accept, compare,
// sweep and tune start them as
//
//	go test -C lab/jobs -tags jobs -run '^TestNightly$' -count=1 -timeout 0 -args -root ROOT -seeds 1,2,3 [-accept] ...
//
// (built once by internal/testbin, which links it again only when its
// source changed), unless the lab binary carries them itself (a binary
// built by make dist). The jobs are package entry's; the "jobs" tag keeps
// go test ./... from running them.
package jobs_test

import (
	"flag"
	"testing"

	"github.com/nuvirahub/latencylab/lab/jobs/entry"
)

func init() { entry.RegisterFlags(flag.CommandLine) }

func TestFiles(t *testing.T)   { entry.Files(t) }
func TestNightly(t *testing.T) { entry.Nightly(t) }
func TestCompare(t *testing.T) { entry.Compare(t) }
func TestSweep(t *testing.T)   { entry.Sweep(t) }
func TestTune(t *testing.T)    { entry.Tune(t) }
func TestSuite(t *testing.T)   { entry.Suite(t) }
