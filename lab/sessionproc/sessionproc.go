// Package sessionproc runs one scenario session as data in, data out: a
// scenario (as YAML) goes in, its result (as JSON) comes out. It is what a
// process that runs sessions for another one does, whether that process is
// a native worker (package lab/jobs) or a WebAssembly instance (package
// lab/exact), so that both run a session the same way.
package sessionproc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"testing/cryptotest"
	"testing/synctest"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/nuvirahub/latencylab/lab"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/scenarios"
)

// Item is a session handed to another process: the scenario as YAML, a
// variant's changes applied, so that nothing but data crosses.
type Item struct {
	Name string `json:"name"`
	File string `json:"file"`
	YAML string `json:"yaml"`
	// ExpectLines are the expectations' lines in File: the YAML is the
	// scenario written anew, whose lines are not the file's, and a check
	// that fails names the line the user wrote.
	ExpectLines []int `json:"expect_lines,omitempty"`
	// CollectEvery, when positive, takes the garbage collector's timing
	// out of the session (lab/exact's guests set it): the collector's own
	// pacing is off from before the session to its end, and it collects
	// at each CollectEvery of the session's virtual time, once every
	// other goroutine of the session is blocked. Where the collector
	// would otherwise run depends on what the process allocates, and
	// where it runs moves the order of goroutines ready at one instant
	// (docs/determinism.md).
	CollectEvery time.Duration `json:"collect_every_ns,omitempty"`
}

// Result is the answer for an Item.
type Result struct {
	Result *result.Run `json:"result,omitempty"`
	// Err is why there is no result or why it is incomplete; Skipped says
	// the scenario needs ../shared and it is absent.
	Err     string `json:"error,omitempty"`
	Skipped bool   `json:"skipped,omitempty"`
	// Wall is the session's wall time as the process that ran it saw it
	// (a WebAssembly instance's clock is not the wall's: see
	// lab/exact).
	Wall time.Duration `json:"wall_ns"`
}

// NewItem describes sc for another process.
func NewItem(sc *scenarios.Scenario) (Item, error) {
	data, err := yaml.Marshal(sc)
	if err != nil {
		return Item{}, fmt.Errorf("sessionproc: scenario %s: %w", sc.Name, err)
	}
	item := Item{Name: sc.Name, File: sc.File, YAML: string(data)}
	for _, e := range sc.Expect {
		item.ExpectLines = append(item.ExpectLines, e.Line)
	}
	return item, nil
}

// Scenario is the item's scenario, as NewItem was given it.
func (item Item) Scenario() (*scenarios.Scenario, error) {
	sc, err := scenarios.Parse(item.File, []byte(item.YAML), nil)
	if err != nil {
		return nil, fmt.Errorf("scenario %s does not survive the trip to the worker: %w", item.Name, err)
	}
	sc.Name = item.Name
	if len(item.ExpectLines) == len(sc.Expect) {
		for i := range sc.Expect {
			sc.Expect[i].Line = item.ExpectLines[i]
		}
	}
	return sc, nil
}

// Seeded reports whether Run seeds crypto/rand: testing/cryptotest does so
// only in a test binary (testing.Testing), which a lab binary is when
// built as make dist builds it (-X testing.testBinary=1); a plain go
// build's sessions draw QUIC's and TLS's randomness unseeded, so two runs
// of a seed differ.
func Seeded() bool { return testing.Testing() }

// Run runs the item's session in a bubble of its own, with crypto/rand
// seeded by the scenario's seed when Seeded (testing/cryptotest: for the
// whole process, so never from parallel tests). It is what makes a session a
// function of its scenario and seed, as far as the process's scheduling
// allows.
func Run(t *testing.T, item Item) Result {
	sc, err := item.Scenario()
	if err != nil {
		return Result{Err: err.Error()}
	}
	var res Result
	began := time.Now()
	if Seeded() {
		cryptotest.SetGlobalRandom(t, sc.Seed)
	}
	if item.CollectEvery > 0 {
		// Off, which waits for a collection under way to end; then one
		// whole collection (its workers made, its sweep done), so that
		// nothing of the collector's is left to run in the session.
		defer debug.SetGCPercent(debug.SetGCPercent(-1))
		runtime.GC()
	}
	synctest.Test(t, func(t *testing.T) {
		if item.CollectEvery > 0 {
			go collect(t.Context(), item.CollectEvery)
		}
		r, err := lab.Run(t.Context(), sc)
		res.Result = r
		if err != nil {
			res.Err = err.Error()
			res.Skipped = errors.Is(err, lab.ErrSharedAbsent)
		}
	})
	res.Wall = time.Since(began)
	return res
}

// collect runs the garbage collector at each every of the bubble's time,
// when every other goroutine of the bubble is blocked: at instants and in
// a state that depend on the session only, not on how much it allocates.
// It ends with ctx. (A bubble has one synctest.Wait at a time: a
// session's own code must not wait so.)
func collect(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		synctest.Wait()
		runtime.GC()
	}
}

// Serve runs the items read from in, one JSON line each, and writes each
// result to out as one JSON line, until in ends. Each line of out starts
// with prefix, so that a reader can tell results from whatever else the
// process prints there.
func Serve(t *testing.T, in io.Reader, out io.Writer, prefix string) error {
	lines := bufio.NewScanner(in)
	lines.Buffer(make([]byte, 1<<20), 64<<20)
	for lines.Scan() {
		var item Item
		if err := json.Unmarshal(lines.Bytes(), &item); err != nil {
			return fmt.Errorf("sessionproc: reading an item: %w", err)
		}
		line, err := json.Marshal(Run(t, item))
		if err != nil {
			return fmt.Errorf("sessionproc: %s: %w", item.Name, err)
		}
		if _, err := fmt.Fprintf(out, "%s%s\n", prefix, line); err != nil {
			return fmt.Errorf("sessionproc: writing a result: %w", err)
		}
	}
	return lines.Err()
}

// LastLines is the last n lines of a failed process's output: what says
// why it failed.
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// ErrNoResult is returned by FindResult when the output holds no result
// line.
var ErrNoResult = errors.New("sessionproc: no result in the output")

// FindResult finds the last result line (one starting with prefix) in a
// process's output and decodes it.
func FindResult(output []byte, prefix string) (Result, error) {
	var found []byte
	for line := range bytes.Lines(output) {
		if rest, ok := bytes.CutPrefix(line, []byte(prefix)); ok {
			found = rest
		}
	}
	if found == nil {
		return Result{}, ErrNoResult
	}
	var res Result
	if err := json.Unmarshal(found, &res); err != nil {
		return Result{}, fmt.Errorf("sessionproc: a result line: %w", err)
	}
	return res, nil
}
