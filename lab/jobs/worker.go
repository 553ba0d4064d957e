package jobs

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/nuvirahub/latencylab/lab/sessionproc"
	"github.com/nuvirahub/latencylab/scenarios"
)

// Reproducible sessions. A session in a bubble is a function of its seed
// only when nothing else decides for it: crypto/rand (QUIC's connection IDs
// and packet-number skips, TLS) must be seeded, which testing/cryptotest
// does for the whole process and so only outside parallel tests; and with
// more than one P, or with asynchronous preemption (a wall-clock timer),
// the order in which goroutines that are ready at the same virtual
// instant run depends on the machine. Measured on abr-lossy: 8 runs in one
// process gave 8 different latency medians; with crypto/rand seeded and
// one P, 35 of 36 runs were identical.
//
// So a plan can run its sessions in worker processes: copies of the test
// binary, each with GOMAXPROCS=1 and asynchronous preemption off, running
// one session at a time with crypto/rand seeded by the session's seed. The
// workers run side by side, one per core. What can still differ is what
// follows the wall clock or the runtime's unseeded random source inside
// the Go runtime (preemption, a mutex's hand-over, select): rare, not
// never (826 of 864 sessions of a sweep were the same in two runs).
//
// Or it can run them exact (Plan.Exact): each session in a fresh
// WebAssembly instance with deterministic clocks (package lab/exact),
// where the same session always gives the same result, at about a tenth
// of the speed.

// workerEnv marks a process as a worker; its value is the test that serves.
const workerEnv = "LATENCYLAB_JOBS_WORKER"

var workerTest struct {
	sync.Mutex
	name string
}

// UseWorkers makes Run use worker processes: test is the name of a test of
// the running test binary that calls Serve first thing (TestWorker in this
// package's tests). The job entry points call it; without it Run runs
// sessions in its own process, faster to start and not reproducible.
func UseWorkers(test string) {
	workerTest.Lock()
	defer workerTest.Unlock()
	workerTest.name = test
}

func workerName() string {
	workerTest.Lock()
	defer workerTest.Unlock()
	return workerTest.name
}

// Serving reports whether this process is a worker.
func Serving() bool { return os.Getenv(workerEnv) != "" }

// Serve is a worker's loop: sessions from stdin, one JSON line each
// (sessionproc.Item), results to file descriptor 3, until stdin ends.
// Call it from the test UseWorkers names, when Serving.
func Serve(t *testing.T) {
	results := os.NewFile(3, "results")
	if results == nil {
		t.Fatal("jobs: worker without its results pipe (file descriptor 3)")
	}
	defer results.Close()
	if err := sessionproc.Serve(t, os.Stdin, results, ""); err != nil {
		t.Fatalf("jobs: worker: %v", err)
	}
}

// worker is a running worker process.
type worker struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	results *json.Decoder
	stderr  *strings.Builder
	close   func()
}

// startWorker starts a copy of the test binary serving test.
func startWorker(test string) (*worker, error) {
	// The running binary by its path, not os.Args[0]: a job may have
	// changed its working folder (to the user's, for scenario files),
	// and a lab binary started from PATH has a bare name there.
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("jobs: start worker: %w", err)
	}
	cmd := exec.Command(exe, "-test.run=^"+test+"$", "-test.count=1", "-test.timeout=0")
	godebug := "asyncpreemptoff=1"
	if g := os.Getenv("GODEBUG"); g != "" {
		godebug = g + "," + godebug
	}
	cmd.Env = append(os.Environ(), workerEnv+"="+test, "GOMAXPROCS=1", "GODEBUG="+godebug)
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.ExtraFiles = []*os.File{w}
	cmd.Stdout = io.Discard
	var stderr strings.Builder // read only after the worker has ended
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		r.Close()
		w.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("jobs: start worker: %w", err)
	}
	w.Close() // the child has its copy
	wk := &worker{cmd: cmd, stdin: stdin, results: json.NewDecoder(r), stderr: &stderr}
	wk.close = func() {
		stdin.Close()
		cmd.Wait()
		r.Close()
	}
	return wk, nil
}

// run hands the worker one session and waits for its result.
func (wk *worker) run(sc *scenarios.Scenario) (sessionproc.Result, error) {
	item, err := sessionproc.NewItem(sc)
	if err != nil {
		return sessionproc.Result{}, err
	}
	line, err := json.Marshal(item)
	if err != nil {
		return sessionproc.Result{}, err
	}
	if _, err := wk.stdin.Write(append(line, '\n')); err != nil {
		return sessionproc.Result{}, fmt.Errorf("jobs: worker: %w", err)
	}
	var res sessionproc.Result
	if err := wk.results.Decode(&res); err != nil {
		wk.close()
		return sessionproc.Result{}, fmt.Errorf("jobs: worker died running %s: %w\n%s", sc.Name, err, sessionproc.LastLines(wk.stderr.String(), 20))
	}
	return res, nil
}
