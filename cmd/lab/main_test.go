package main

import (
	"os"
	"testing"

	"github.com/nuvirahub/latencylab/lab/jobs/entry"
)

// TestMain lets this test binary be a job's process, as the lab binary
// is: a test binary is seeded (sessionproc.Seeded), so the jobs the tests
// start run in a copy of it (jobRun), which must then run the job rather
// than the tests.
func TestMain(m *testing.M) {
	if entry.Requested() {
		entry.Main()
	}
	os.Exit(m.Run())
}
