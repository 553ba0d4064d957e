//go:build jobs

// The entry point of `lab test -exact=false`: the user's scenario files
// run natively, in worker processes, which only a test binary can start
// (a session needs a synctest bubble). lab test starts it as
//
//	go test -C lab/jobs -tags jobs -run '^TestFiles$' -count=1 -timeout 0 -args -files-out FILE -dir DIR [-defaults FILE] [-seeds 1,2] [-parallel N] -- FILE|DIR...
//
// and judges, reports and writes what it hands back; lab test runs exact
// sessions itself (jobs.RunExact). The loading and judging are package
// filetest's, as for lab test and go test ./lab -run Files.
package jobs_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/lab/filetest"
	"github.com/nuvirahub/latencylab/lab/jobs"
)

var (
	flagFilesOut = flag.String("files-out", "", "lab test: the file the sessions are written to, a JSON line each (filetest.Outcome)")
	flagDir      = flag.String("dir", "", "lab test: the folder the scenario paths are relative to (lab test's working directory)")
	flagDefaults = flag.String("defaults", "", "lab test: the defaults file of every scenario (default: each folder's defaults.yaml, else the library's)")
)

// TestFiles runs the scenario files named after the flags, each at its
// own seed or at every -seeds, in worker processes on -parallel cores,
// prints a progress line per session as it finishes and writes every
// session to -files-out. It fails only when it cannot run: judging is lab
// test's.
func TestFiles(t *testing.T) {
	require.NotEmpty(t, *flagFilesOut, "-files-out: lab test names the file for the sessions")
	// Sessions in worker processes: reproducible for a seed (worker.go).
	jobs.UseWorkers("TestWorker")
	if *flagDir != "" {
		// The paths as the user wrote them, so that the results name
		// the files as lab test's exact sessions do; the workers start
		// here too.
		t.Chdir(*flagDir)
	}
	seeds, parallel := seedsAndParallel(t)
	scs, err := filetest.Load(flag.Args(), *flagDefaults)
	require.NoError(t, err)
	sessions := jobs.Run(t, jobs.Plan{
		Scenarios: scs, Seeds: seeds, Parallel: parallel,
		Finished: func(s jobs.Session, done, total int) {
			o := filetest.FromSession(s)
			fmt.Print(filetest.ProgressLine(o, filetest.Judge(o), done, total))
		},
	})
	f, err := os.Create(*flagFilesOut)
	require.NoError(t, err)
	enc := json.NewEncoder(f)
	for _, s := range sessions {
		require.NoError(t, enc.Encode(filetest.FromSession(s)))
	}
	require.NoError(t, f.Close())
}
