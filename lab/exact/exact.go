// Package exact runs scenario sessions that depend on their scenario and
// seed only: the same session gives the same result, frame for frame, in
// any run, any shard, on any machine with the same code and Go version.
//
// Why this takes a separate machine. A session is goroutines in a synctest
// bubble (the lab's QUIC connection, the agent, the viewer, the links), and
// at one virtual instant several of them are often ready at once. Their
// order is the Go runtime's, and three things in it follow the wall clock
// or an unseeded source: the scheduler's monitor preempts a goroutine (and
// with it a chain of goroutines that share its time slice) after 10 ms of
// wall time; a sync.Mutex turns to handing itself over once a waiter has
// waited 1 ms of wall time; and a select with several ready cases, like a
// map, draws from the runtime's own random source, seeded by the kernel.
// Measured on one sweep session run 8 times in fresh native processes:
// two outcomes (70.2 and 87.9 ms latency median), 4 and 4; with any one or
// two of the three removed from a copy of the runtime (a probe, go build
// -overlay), still two; with all three removed, one, in 20 runs of 20. A
// native worker (lab/jobs) settles most sessions but not all: 826 of
// 864 in a sweep.
//
// So this package compiles the lab (package lab/sessionproc/guest,
// the whole session code) to WebAssembly (GOOS=wasip1) and runs each
// session in a fresh instance under wazero, a WebAssembly runtime written
// in Go. There, the Go runtime has one thread and no monitor, so nothing
// preempts; the instance's random source is wazero's fixed one, so the
// select decisions repeat; and its clock moves only when the guest sleeps
// (never, in a session), so no waiter of a sync.Mutex ever waits the 1 ms
// that turns the mutex to handing itself over. The guest's garbage
// collector runs only where the guest asks, before the session and at
// each CollectEvery of its virtual time with every goroutine of the
// session blocked, since the collector's work moves the order of
// goroutines ready at one instant and draws from the runtime's random
// stream: where it ran would otherwise follow how much the guest
// allocates. It is Go's collector from before green tea, whose mark draws
// from that stream as often as the heap's layout has it. A fresh instance
// per session keeps a session independent of those run before it in the
// same process, which is what makes a shard's sessions the same as the
// unsharded run's.
//
// The price is speed: a session runs about 10 times slower than natively
// (see the sweep's figures in docs/performance.md), and the first use builds the guest
// (go test -c, GOOS=wasip1) and compiles it to machine code, cached in
// the user's cache folder.
package exact

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/nuvirahub/latencylab/agent/encoder/openh264"
	"github.com/nuvirahub/latencylab/internal/filelock"
	"github.com/nuvirahub/latencylab/internal/testbin"
	"github.com/nuvirahub/latencylab/lab/sessionproc"
	"github.com/nuvirahub/latencylab/lab/sessionproc/guest"
	"github.com/nuvirahub/latencylab/scenarios"
)

// GuestPackage is the package whose test binary is the guest, relative to
// the module's root.
const GuestPackage = "./lab/sessionproc/guest"

// Options configure Open.
type Options struct {
	// Root is the module's root, where the guest is built, unless the
	// lab binary carries its guest (make dist's): then it is not read.
	Root string
	// CacheDir keeps the guest compiled to machine code between runs;
	// empty is latencylab/exact in the user's cache folder (or, without
	// one, in the temporary folder).
	CacheDir string
	// Log, when set, is told what the first use builds and how long it
	// takes.
	Log io.Writer
}

// EnvVar names the environment variable whose NAME=VALUE words, separated
// by spaces, Open adds to every guest's environment, as a comparison of
// the guest's settings does:
//
//	LATENCYLAB_EXACT_GUEST_ENV=GOGC=50 go run ./cmd/lab test -out out/gogc50 scenarios/library
//
// gives the library's results with GOGC=50 given to the guest, which
// overrides it (guestEnv): the same results, byte for byte.
const EnvVar = "LATENCYLAB_EXACT_GUEST_ENV"

// CollectEvery is how often, in a session's virtual time, the guest's
// garbage collector runs; it runs at no other time in a session (see
// guestEnv and sessionproc.Item.CollectEvery). A second keeps a guest's
// memory to what a session allocates in a second and costs a collection
// of the live heap per session second.
const CollectEvery = time.Second

// guestEnv is what every guest's runtime is told, whatever else it is
// given (EnvVar, WithEnv). The collector's work draws numbers from the
// runtime's random stream (its stack scans), the stream that also orders
// a select's ready cases and the timers due at one instant, and moves the
// order of goroutines ready at one instant, so where it runs must not
// depend on what the guest allocates: GOGC=off from the guest's start, so
// that it runs only where the guest asks (before a session and at each
// CollectEvery of it: sessionproc.Item.CollectEvery). memprofilerate=0:
// the heap profile, off, draws nothing on allocation; on, it draws once
// per 512 KiB allocated.
var guestEnv = [][2]string{{"GOGC", "off"}, {"GODEBUG", "memprofilerate=0"}}

// Runner runs exact sessions. It is safe for concurrent use: each Run
// starts its own instance.
type Runner struct {
	runtime wazero.Runtime
	module  wazero.CompiledModule
	dir     string // the working directory the guest sees
	guest   string
	wasm    [sha256.Size]byte // the guest's WebAssembly's SHA-256
	env     [][2]string
}

// Guest names the guest this runner runs: the first 8 bytes, in hex, of
// the SHA-256 of its WebAssembly and of how it is run (its environment,
// how often it collects). Two runners with the same Guest give the same
// session the same result; the guest is built with -trimpath, so the name
// depends on the source and the Go version, not on where the checkout is.
func (r *Runner) Guest() string { return r.guest }

// name is Guest's name for r's WebAssembly run with r's environment.
func (r *Runner) name() string {
	h := sha256.New()
	h.Write(r.wasm[:])
	fmt.Fprintf(h, "collect every %v\n", CollectEvery)
	for _, kv := range r.env {
		fmt.Fprintf(h, "%s=%s\n", kv[0], kv[1])
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// Open builds the guest from the module's source, compiles it, and
// returns a Runner. Close it when done.
func Open(ctx context.Context, o Options) (*Runner, error) {
	root, err := filepath.Abs(o.Root)
	if err != nil {
		return nil, err
	}
	if o.CacheDir == "" {
		// Without a home (some CI runners), the temporary folder: the
		// cache only saves the compile time.
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		o.CacheDir = filepath.Join(base, "latencylab", "exact")
	}
	logf := func(format string, args ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, format, args...)
		}
	}
	began := time.Now()
	env, err := parseEnv(nil, strings.Fields(os.Getenv(EnvVar)))
	if err != nil {
		return nil, err
	}
	bin, shipped, err := guestFor(ctx, root)
	if err != nil {
		return nil, err
	}
	if shipped {
		logf("exact: the guest built into this lab (%.1f MB, sha256 %.16s)\n", float64(len(bin))/1e6, ShippedGuestSHA)
	} else {
		logf("exact: guest built (%s, %.1f MB) in %s\n", GuestPackage, float64(len(bin))/1e6, time.Since(began).Round(100*time.Millisecond))
	}
	cache, err := wazero.NewCompilationCacheWithDir(o.CacheDir)
	if err != nil {
		return nil, fmt.Errorf("exact: compilation cache %s: %w", o.CacheDir, err)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(cache))
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("exact: %w", err)
	}
	began = time.Now()
	// One compile of a guest at a time on this machine: wazero's cache is
	// filled only once a compile is done, so processes that start at once
	// (the test binaries of go test ./..., a cluster's shards) each
	// compiled the guest, 11 s or more each on 2 cores (100 s under the
	// race detector). The first compiles; the others then read it.
	if err := os.MkdirAll(o.CacheDir, 0o755); err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("exact: compilation cache %s: %w", o.CacheDir, err)
	}
	unlock := filelock.Lock(filepath.Join(o.CacheDir, "compile.lock"))
	mod, err := rt.CompileModule(ctx, bin)
	unlock()
	if err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("exact: compiling the guest: %w", err)
	}
	logf("exact: guest compiled to machine code in %s (cached in %s)\n", time.Since(began).Round(100*time.Millisecond), o.CacheDir)
	dir, err := os.Getwd()
	if err != nil {
		rt.Close(ctx)
		return nil, err
	}
	r := &Runner{runtime: rt, module: mod, dir: dir, wasm: sha256.Sum256(bin), env: env}
	r.guest = r.name()
	return r, nil
}

// WithEnv returns a Runner of the same guest whose instances have more
// environment, NAME=VALUE each (GOGC=50), after r's: what a test sets to
// show that something does not move a result. It shares r's compiled
// guest: close r, not it.
func (r *Runner) WithEnv(kv ...string) (*Runner, error) {
	env, err := parseEnv(r.env, kv)
	if err != nil {
		return nil, err
	}
	c := *r
	c.env = env
	c.guest = c.name()
	return &c, nil
}

// parseEnv appends the NAME=VALUE words to env.
func parseEnv(env [][2]string, kvs []string) ([][2]string, error) {
	env = slices.Clone(env)
	for _, kv := range kvs {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("exact: guest environment %q: want NAME=VALUE", kv)
		}
		env = append(env, [2]string{name, value})
	}
	return env, nil
}

// ShippedGuestSHA is the SHA-256, in hex, of the guest built from this
// binary's own source, set when the binary is linked (make dist:
// -ldflags=-X=...ShippedGuestSHA=...) beside the guest it builds in. A
// binary whose built-in guest has another hash, or that names a hash but
// carries no guest, refuses exact sessions (ErrGuestMismatch): its native
// sessions and its exact ones would run different code.
var ShippedGuestSHA string

// ErrGuestMismatch is the refusal of exact sessions by a binary whose
// built-in guest is not the one built from its own source.
var ErrGuestMismatch = errors.New("exact: the guest built into this lab is not the one built from its source")

// ErrNoGuest is the refusal of exact sessions by a lab that carries no
// guest, outside the module's source, or without the go command to build
// one.
var ErrNoGuest = errors.New("exact: no guest to run sessions in")

// guestFor is the guest's WebAssembly: the one built into this binary,
// checked against the hash it was linked with; else built from the
// module's source in root. shipped says which.
func guestFor(ctx context.Context, root string) (bin []byte, shipped bool, err error) {
	if shippedGuest != nil || ShippedGuestSHA != "" {
		sum := sha256.Sum256(shippedGuest)
		if got := hex.EncodeToString(sum[:]); shippedGuest == nil || got != ShippedGuestSHA {
			return nil, false, fmt.Errorf("%w (built in: %d bytes, sha256 %.16s; built from its source: sha256 %.16s): "+
				"build the lab with make dist, which builds both from one source, or run natively (-exact=false)",
				ErrGuestMismatch, len(shippedGuest), got, ShippedGuestSHA)
		}
		return shippedGuest, true, nil
	}
	if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(GuestPackage))); err != nil {
		return nil, false, fmt.Errorf("%w: this lab carries none (make dist builds one in), and %s is not the latencylab module to build it from (%s is missing); "+
			"run natively (-exact=false), from the lab's checkout, or with a lab built by make dist", ErrNoGuest, root, GuestPackage)
	}
	if _, err := exec.LookPath("go"); err != nil {
		return nil, false, fmt.Errorf("%w: this lab carries none (make dist builds one in), and the go command that builds it from %s is not on PATH; "+
			"run natively (-exact=false), add Go to PATH, or use a lab built by make dist", ErrNoGuest, root)
	}
	bin, err = Build(ctx, root)
	return bin, false, err
}

// Build compiles the guest's test binary to WebAssembly from the source
// in root and returns it. internal/testbin keeps it between runs and links
// it again only when its source changed; builds of it take turns on this
// machine, so that the test binaries go test ./... runs side by side
// (lab, lab/exact, lab/jobs, cmd/lab, lab/cluster, ...) do not each compile
// the whole lab to WebAssembly at once: the first builds, and the others
// find it built.
func Build(ctx context.Context, root string) ([]byte, error) {
	// The collector before green tea: green tea's mark draws from the
	// runtime's random stream each time its queue of spans runs dry, which
	// follows the heap's layout, so an allocation that decides nothing
	// moved the select and timer decisions after a collection
	// (docs/determinism.md).
	env := []string{"GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0", "GOEXPERIMENT=nogreenteagc"}
	bin, remove, err := testbin.Build(ctx, filepath.Join(root, filepath.FromSlash(GuestPackage)), []string{"-trimpath"}, env, testbin.Options{})
	if err != nil {
		return nil, fmt.Errorf("exact: building the guest (GOOS=wasip1 GOARCH=wasm GOEXPERIMENT=nogreenteagc go test -c -trimpath %s in %s): %w", GuestPackage, root, err)
	}
	defer remove()
	return os.ReadFile(bin)
}

// Run runs one session in a fresh instance and returns its result, with
// Wall the session's wall time as the host saw it (the instance's clock is
// not the wall's).
func (r *Runner) Run(ctx context.Context, sc *scenarios.Scenario) (sessionproc.Result, error) {
	if err := Supports(sc); err != nil {
		return sessionproc.Result{}, err
	}
	item, err := sessionproc.NewItem(sc)
	if err != nil {
		return sessionproc.Result{}, err
	}
	item.CollectEvery = CollectEvery
	line, err := jsonLine(item)
	if err != nil {
		return sessionproc.Result{}, err
	}
	var stdout, stderr bytes.Buffer
	cfg := wazero.NewModuleConfig().
		WithName(""). // anonymous: instances of one module side by side
		WithArgs("guest.wasm", "-test.run=^TestGuest$", "-test.count=1", "-test.timeout=0").
		WithEnv(guest.GuestEnv, "1").
		WithEnv("PWD", r.dir).
		WithStdin(bytes.NewReader(line)).
		WithStdout(&stdout).
		WithStderr(&stderr).
		// Scenario files and traces are read where the host has them.
		WithFSConfig(wazero.NewFSConfig().WithReadOnlyDirMount("/", "/"))
	// The guest's own settings last: wazero keeps the last value of a
	// name.
	for _, kv := range slices.Concat(r.env, guestEnv) {
		cfg = cfg.WithEnv(kv[0], kv[1])
	}
	// The random source stays wazero's deterministic default. The clock
	// is one that only the guest's sleeps move (the runtime sleeps when
	// it has nothing to run, which a session's bubble never lets happen):
	// wazero's default advances 1 ms per reading, and a sync.Mutex turns
	// to handing itself over once a waiter has waited 1 ms, so the
	// readings in between (the garbage collector's among them) would
	// decide who takes a lock next. The runtime refuses a clock at 0.
	now := int64(1)
	cfg = cfg.WithNanotime(func() int64 { return now }, 1).
		WithNanosleep(func(ns int64) { now += ns }).
		WithWalltime(func() (int64, int32) {
			t := guestEpoch + now
			return t / 1e9, int32(t % 1e9)
		}, 1)
	began := time.Now()
	mod, err := r.runtime.InstantiateModule(ctx, r.module, cfg)
	wall := time.Since(began)
	if mod != nil {
		mod.Close(ctx)
	}
	var exit *sys.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 0 {
		err = nil
	}
	res, findErr := sessionproc.FindResult(stdout.Bytes(), guest.ResultPrefix)
	if err != nil || findErr != nil {
		return sessionproc.Result{}, fmt.Errorf("exact: session %s (seed %d): %w\n%s", sc.Name, sc.Seed, errors.Join(err, findErr),
			sessionproc.LastLines(stdout.String()+stderr.String(), 20))
	}
	res.Wall = wall
	return res, nil
}

// guestEpoch is the guest's wall clock at its start, in nanoseconds since
// 1970 (wazero's fake clock's, 2022-01-01); the guest's sessions keep
// their own virtual time.
const guestEpoch = 1640995200 * int64(time.Second)

// ErrNative: the scenario needs what only a native process has.
var ErrNative = errors.New("exact: the scenario runs natively only")

// Supports says whether a scenario can run as an exact session: one whose
// encoder is a real one (OpenH264, through cgo) cannot, since the guest is
// WebAssembly, which has no cgo. It runs natively (go test, lab run, the
// jobs without -exact), where the real encoder's session is the same from
// run to run in what the encoder and decoder decide (lab's
// TestRealDeterministic). Nor can an ECN-capable session: quic-go reads and
// sets the ECN bits only through a Linux conn's out-of-band API, and in the
// WebAssembly guest it has a plain one.
func Supports(sc *scenarios.Scenario) error {
	if slices.Contains(openh264.Presets(), sc.Agent.Encoder) {
		return fmt.Errorf("%w: %s names agent.encoder %s, OpenH264 through cgo, and exact sessions run in WebAssembly, which cannot run cgo: run it natively (go test, lab run, or the jobs without -exact)",
			ErrNative, sc.Name, sc.Agent.Encoder)
	}
	ecn := "ecn"
	if sc.ECN == "" {
		ecn = ""
		for i, f := range sc.Traffic {
			if f.QUICECN() {
				ecn = fmt.Sprintf("traffic[%d].ecn", i)
				break
			}
		}
	}
	if ecn != "" {
		return fmt.Errorf("%w: %s sets %s, and quic-go in the WebAssembly guest neither sets nor reads the ECN bits (it does through a Linux socket's control messages only): run it natively (go test, or the jobs without -exact)",
			ErrNative, sc.Name, ecn)
	}
	return nil
}

// NativeOnly says whether only a native process can run sc (Supports
// refuses it with ErrNative): the exact runs hand such a scenario to a
// native session.
func NativeOnly(sc *scenarios.Scenario) bool { return errors.Is(Supports(sc), ErrNative) }

// Close releases the runtime.
func (r *Runner) Close(ctx context.Context) error { return r.runtime.Close(ctx) }

// jsonLine is the item as the guest reads it: one JSON line.
func jsonLine(item sessionproc.Item) ([]byte, error) {
	data, err := json.Marshal(item)
	return append(data, '\n'), err
}
