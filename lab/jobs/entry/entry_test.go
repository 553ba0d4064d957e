package entry_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/lab/jobs/entry"
)

// lab/jobs's test binary (a checkout's source path) runs the same jobs as
// a lab binary: its jobs-tagged file has a test for each of entry.Tests
// but the worker (lab/jobs's own TestWorker), each calling the entry point
// of its name.
func TestLabJobsTestBinaryHasEveryJob(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "entry_job_test.go"))
	require.NoError(t, err)
	var wrapped []string
	for _, m := range regexp.MustCompile(`(?m)^func (Test(\w+))\(t \*testing\.T\) +\{ entry\.(\w+)\(t\) \}$`).FindAllStringSubmatch(string(src), -1) {
		require.Equal(t, m[2], m[3], "%s calls entry.%s", m[1], m[3])
		wrapped = append(wrapped, m[1])
	}
	var jobs []string
	for _, j := range entry.Tests {
		if j.Name != entry.WorkerTest {
			jobs = append(jobs, j.Name)
		}
	}
	slices.Sort(wrapped)
	slices.Sort(jobs)
	require.Equal(t, jobs, wrapped)
}
