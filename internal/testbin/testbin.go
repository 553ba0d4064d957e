// Package testbin builds test binaries that are used again and again: a
// lab job's entry point (lab/jobs, which every lab nightly, sweep, tune
// and test runs) and the exact mode's WebAssembly guest.
//
// go test links the test binary again on every run, and go test -c does
// too when its output goes to a new folder: 3-7 s each for the lab's, on
// 2 cores. The go command skips the link only when the output file is
// already there with the build ID it would build. So Build keeps each
// binary at a path of its own in the user's cache folder, named by what
// decides it (the package's folder, the flags, the build's environment),
// builds it there under a lock on this machine, and hands each caller a
// hard link of its own: a later build that replaces the cached file
// leaves a running caller's binary as it was.
package testbin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/nuvirahub/latencylab/internal/filelock"
)

// decides matches the environment variables that decide what the go
// command builds; the rest of the environment is passed on but does not
// name the binary.
var decides = regexp.MustCompile(`^(GOOS|GOARCH|GOAMD64|GOARM|CGO_ENABLED|CGO_CFLAGS|CGO_LDFLAGS|GOEXPERIMENT|GOFLAGS|GOTOOLCHAIN)=`)

// Options say where Build keeps its binaries.
type Options struct {
	// CacheDir holds the binaries; empty is latencylab/testbin in the
	// user's cache folder (or, without one, in the temporary folder).
	CacheDir string
}

// Build runs go test -c for the package in dir with flags (such as -tags
// jobs, -trimpath) and env added to the process's environment, and
// returns the path of a binary that is the caller's alone, and a func
// that removes it. A failed build's error holds the go command's output.
func Build(ctx context.Context, dir string, flags, env []string, o Options) (bin string, remove func(), err error) {
	dir, err = filepath.Abs(dir)
	if err != nil {
		return "", nil, err
	}
	if o.CacheDir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		o.CacheDir = filepath.Join(base, "latencylab", "testbin")
	}
	folder := filepath.Join(o.CacheDir, key(dir, flags, env))
	if err := os.MkdirAll(folder, 0o755); err != nil {
		return "", nil, err
	}
	name := filepath.Base(dir) + ".test"
	cached := filepath.Join(folder, name)

	// One build of a binary at a time on this machine, so that a second
	// caller finds the first one's binary up to date rather than linking
	// it again beside it. Unlocked (no flock), builds cost time, never a
	// result: the go command removes its old output before it writes the
	// new one (or renames a finished file over it), which leaves the
	// callers' hard links whole.
	unlock := filelock.Lock(filepath.Join(folder, "lock"))
	defer unlock()
	// -vet=off: go test -c vets the package first, with every
	// dependency's facts, which for the exact guest means vetting the
	// whole lab again for WebAssembly; the lab's own CI vets its source,
	// and vet changes nothing in the binary.
	cmd := exec.CommandContext(ctx, "go", slices.Concat([]string{"test", "-c", "-vet=off", "-o", cached}, flags, []string{"."})...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", nil, fmt.Errorf("go %s in %s: %w\n%s", strings.Join(cmd.Args[1:], " "), dir, err, out)
	}
	pruneRuns(folder, time.Now().Add(-staleRun))
	own, err := os.MkdirTemp(folder, "run-")
	if err != nil {
		return "", nil, err
	}
	remove = func() { os.RemoveAll(own) }
	bin = filepath.Join(own, name)
	if err := os.Link(cached, bin); err != nil {
		// A cache on a file system without hard links: a copy.
		if err := copyFile(bin, cached); err != nil {
			remove()
			return "", nil, errors.Join(fmt.Errorf("testbin: neither a link nor a copy of %s", cached), err)
		}
	}
	return bin, remove, nil
}

// key names a binary by what decides it.
func key(dir string, flags, env []string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%q\n", dir, flags)
	for _, kv := range env {
		if decides.MatchString(kv) {
			fmt.Fprintf(h, "%s\n", kv)
		}
	}
	for _, kv := range os.Environ() {
		if decides.MatchString(kv) {
			fmt.Fprintf(h, "process %s\n", kv)
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

func copyFile(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// staleRun is how old a caller's folder must be before a later build
// removes it: a caller removes its own when done, so one left behind is a
// process that was killed first (a day is longer than any lab job runs).
const staleRun = 24 * time.Hour

// pruneRuns removes the run-* folders in folder last changed before
// cutoff. Errors are ignored: a folder it cannot remove costs only disk.
func pruneRuns(folder string, cutoff time.Time) {
	runs, _ := filepath.Glob(filepath.Join(folder, "run-*"))
	for _, r := range runs {
		if fi, err := os.Stat(r); err == nil && fi.ModTime().Before(cutoff) {
			os.RemoveAll(r)
		}
	}
}
