// Package jobs runs the lab's sessions in bulk for the reports: every
// scenario of a set, under each of several configurations (variants), for
// each of several seeds, each session in its own testing/synctest bubble,
// as many at once as there are cores, with a progress line.
//
// Virtual time needs a bubble, and only a test can make one
// (synctest.Test takes a *testing.T), so Run takes the *testing.T of the
// job's entry point: the nightly, compare and sweep commands are go test
// runs of this package's entry points (built with the "jobs" tag), which
// cmd/lab starts for the user. Exact sessions are the exception: their
// bubble is made inside a WebAssembly instance, so RunExact needs no test,
// and lab test runs them from the command line itself.
package jobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nuvirahub/latencylab/lab"
	"github.com/nuvirahub/latencylab/lab/estimate"
	"github.com/nuvirahub/latencylab/lab/exact"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/lab/sessionproc"
	"github.com/nuvirahub/latencylab/scenarios"
)

// Variant is a configuration: a label and the change it makes to a
// scenario (nil changes nothing: the scenario as written).
type Variant struct {
	Label string
	Apply func(*scenarios.Scenario) error
}

// Plan is a batch of sessions: every scenario under every variant for every
// seed.
type Plan struct {
	Scenarios []*scenarios.Scenario
	Variants  []Variant
	// Seeds replace each scenario's own seed; none keeps it.
	Seeds []uint64
	// Parallel bounds the sessions run at once; 0 is GOMAXPROCS.
	Parallel int
	// Exact, when set, runs each session exact: in a fresh WebAssembly
	// instance of it, where a session depends on its scenario and seed
	// only (package lab/exact). Otherwise sessions run in worker
	// processes if UseWorkers named a test, else in this process.
	Exact *exact.Runner
	// Progress, when set, gets a line per finished session with the count
	// done, the time left, and the virtual seconds run per wall second.
	Progress io.Writer
	// Finished, when set, is called with each session as it finishes,
	// with the count done and the count in all, one call at a time: for
	// a caller that prints its own line (lab test).
	Finished func(s Session, done, total int)
}

// Session is one session's outcome.
type Session struct {
	Variant  string
	Scenario string
	// File is the scenario's file.
	File   string
	Seed   uint64
	Result *result.Run
	// Err is why there is no result, or why it is incomplete; Skipped
	// says the scenario needs ../shared and it is absent.
	Err     error
	Skipped bool
	Wall    time.Duration
}

// job is a session to run: its place in the output and its scenario with
// the variant applied.
type job struct {
	i  int
	sc *scenarios.Scenario
}

// Run runs the plan and returns every session, in the plan's order
// (variant, scenario, seed). A variant that refuses a scenario is that
// session's error; the others run. With Plan.Exact, a scenario that only a
// native process can run (exact.Supports: the real encoder, QUIC's ECN)
// runs natively after the exact ones, in this process, and is judged as
// native runs are (by the bound rule, never by bytes).
func Run(t *testing.T, p Plan) []Session {
	t.Helper()
	out, jobs := p.expand()
	queue, finish := p.start(out, jobs)
	if p.Exact != nil {
		var native []job
		var mu sync.Mutex
		runExact(t.Context(), p.Exact, p.workers(), queue, out, finish, func(j job) {
			mu.Lock()
			defer mu.Unlock()
			native = append(native, j)
		})
		if len(native) > 0 {
			rest := make(chan job, len(native))
			for _, j := range native {
				rest <- j
			}
			close(rest)
			runNative(t, min(p.workers(), len(native)), rest, out, finish)
		}
		return out
	}
	if test := workerName(); test != "" && !Serving() {
		runInWorkers(t, test, p.workers(), queue, out, finish)
		return out
	}
	runNative(t, p.workers(), queue, out, finish)
	return out
}

// runNative runs the queue in this process, workers at a time: one
// subtest per worker, each running its sessions one after the other, each
// in a bubble of its own; the workers run in parallel.
func runNative(t *testing.T, workers int, queue <-chan job, out []Session, finish func(*Session, *scenarios.Scenario)) {
	t.Run("sessions", func(t *testing.T) {
		for w := range workers {
			t.Run(fmt.Sprintf("worker-%d", w), func(t *testing.T) {
				t.Parallel()
				for j := range queue {
					s := &out[j.i]
					began := time.Now()
					synctest.Test(t, func(t *testing.T) {
						s.Result, s.Err = lab.Run(t.Context(), j.sc)
					})
					s.Wall = time.Since(began)
					s.Skipped = errors.Is(s.Err, lab.ErrSharedAbsent)
					finish(s, j.sc)
				}
			})
		}
	})
}

// RunExact runs the plan's sessions exact, as Run does with Plan.Exact
// set, without a test: an exact session runs in a WebAssembly instance,
// whose bubble the guest makes, so the caller needs none (lab test runs
// it from the command line).
func RunExact(ctx context.Context, p Plan) ([]Session, error) {
	if p.Exact == nil {
		return nil, errors.New("jobs: RunExact without a runner (Plan.Exact)")
	}
	out, jobs := p.expand()
	queue, finish := p.start(out, jobs)
	runExact(ctx, p.Exact, p.workers(), queue, out, finish, nil)
	return out, nil
}

// workers is the count of sessions run at once.
func (p Plan) workers() int {
	if p.Parallel <= 0 {
		return runtime.GOMAXPROCS(0)
	}
	return p.Parallel
}

// expand lists the plan's sessions in order (variant, scenario, seed) and
// the jobs to run for them: a variant that refuses a scenario is that
// session's error, and no job.
func (p Plan) expand() ([]Session, []job) {
	variants := p.Variants
	if len(variants) == 0 {
		variants = []Variant{{Label: "as written"}}
	}
	var out []Session
	var jobs []job
	for _, v := range variants {
		for _, base := range p.Scenarios {
			seeds := p.Seeds
			if len(seeds) == 0 {
				seeds = []uint64{base.Seed}
			}
			for _, seed := range seeds {
				s := Session{Variant: v.Label, Scenario: base.Name, File: base.File, Seed: seed}
				sc := *base
				sc.Seed = seed
				if v.Apply != nil {
					if err := v.Apply(&sc); err != nil {
						s.Err = fmt.Errorf("variant %s: %w", v.Label, err)
						out = append(out, s)
						continue
					}
				}
				out = append(out, s)
				jobs = append(jobs, job{len(out) - 1, &sc})
			}
		}
	}
	return out, jobs
}

// start queues the jobs and returns the queue and the function that
// records a finished session: the progress line, and Finished.
func (p Plan) start(out []Session, jobs []job) (<-chan job, func(*Session, *scenarios.Scenario)) {
	// The costliest sessions first (estimate.Model.Longest), so that a
	// long one does not start last and run alone; the time left is told
	// from the estimated cost of what is done and what is not, as the
	// first sessions done are the longest.
	model := estimate.Native
	if p.Exact != nil {
		model = estimate.Exact
	}
	costs := map[*scenarios.Scenario]time.Duration{}
	byScenario := map[*scenarios.Scenario]job{} // each job has its own copy
	scs := make([]*scenarios.Scenario, len(jobs))
	var todo time.Duration
	for i, j := range jobs {
		costs[j.sc] = model.Session(j.sc)
		todo += costs[j.sc]
		byScenario[j.sc] = j
		scs[i] = j.sc
	}
	scs = model.Longest(scs)
	jobs = make([]job, len(scs))
	for i, sc := range scs {
		jobs[i] = byScenario[sc]
	}
	if p.Progress != nil {
		// What the run will take, before its first session (the
		// nightly, compare and the sweep print it so).
		fmt.Fprintln(p.Progress, model.Line(scs, p.workers()))
	}
	var (
		mu       sync.Mutex
		done     int
		doneCost time.Duration
		virtual  time.Duration
	)
	start := time.Now()
	finish := func(s *Session, sc *scenarios.Scenario) {
		mu.Lock()
		defer mu.Unlock()
		done++
		doneCost += costs[sc]
		virtual += sc.Duration
		if p.Finished != nil {
			p.Finished(*s, done, len(jobs))
		}
		if p.Progress != nil {
			el := time.Since(start)
			left := time.Duration(float64(el) / float64(max(doneCost, 1)) * float64(todo-doneCost))
			fmt.Fprintf(p.Progress, "[%*d/%d] %-12s %-28s seed %-6d %5.2f s wall; %.0fx real time, about %s left\n",
				len(fmt.Sprint(len(jobs))), done, len(jobs), s.Variant, s.Scenario, s.Seed, s.Wall.Seconds(),
				virtual.Seconds()/el.Seconds(), left.Round(time.Second))
		}
	}
	queue := make(chan job)
	go func() {
		for _, j := range jobs {
			queue <- j
		}
		close(queue)
	}()
	return queue, finish
}

// runExact runs the queue exact, each session in a fresh instance of r,
// slots at a time. A session that runs natively only (exact.ErrNative)
// goes to native when it is set, unfinished; without it, the refusal is
// the session's error.
func runExact(ctx context.Context, r *exact.Runner, slots int, queue <-chan job, out []Session, finish func(*Session, *scenarios.Scenario), native func(job)) {
	var wg sync.WaitGroup
	for range slots {
		wg.Go(func() {
			for j := range queue {
				if native != nil && exact.NativeOnly(j.sc) {
					native(j)
					continue
				}
				s := &out[j.i]
				res, err := r.Run(ctx, j.sc)
				s.take(res, err)
				finish(s, j.sc)
			}
		})
	}
	wg.Wait()
}

// take records a session's outcome from another process.
func (s *Session) take(res sessionproc.Result, err error) {
	if err != nil {
		s.Err = err
		return
	}
	s.Result, s.Wall, s.Skipped = res.Result, res.Wall, res.Skipped
	if res.Err != "" {
		s.Err = errors.New(res.Err)
	}
}

// runInWorkers runs the queue in worker processes of the test binary, one
// per slot; a worker that fails is that session's error and is replaced.
func runInWorkers(t *testing.T, test string, slots int, queue <-chan job, out []Session, finish func(*Session, *scenarios.Scenario)) {
	t.Helper()
	var wg sync.WaitGroup
	for range slots {
		wg.Go(func() {
			var wk *worker
			defer func() {
				if wk != nil {
					wk.close()
				}
			}()
			for j := range queue {
				s := &out[j.i]
				if wk == nil {
					var err error
					if wk, err = startWorker(test); err != nil {
						s.Err = err
						finish(s, j.sc)
						continue
					}
				}
				res, err := wk.run(j.sc)
				if err != nil {
					wk = nil // closed by run; the next session starts another
				}
				s.take(res, err)
				finish(s, j.sc)
			}
		})
	}
	wg.Wait()
}
