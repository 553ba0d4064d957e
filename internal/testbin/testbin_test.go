package testbin

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// module writes a module of one package whose test prints word, and
// returns its folder.
func module(t *testing.T, dir, word string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/hello\n\ngo 1.26\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hello_test.go"), []byte(`package hello

import "testing"

func TestHello(t *testing.T) { println("`+word+`") }
`), 0o644))
}

func output(t *testing.T, bin string) string {
	t.Helper()
	out, err := exec.Command(bin, "-test.run=^TestHello$").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return string(out)
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	return fi.Sys().(*syscall.Stat_t).Ino
}

// A second build of unchanged source links nothing: the cached binary is
// the same file. A changed source is built again, and a binary handed out
// before keeps running the old code. Builds side by side each get a
// binary that runs.
func TestBuildLinksOnlyWhatChanged(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("this test builds with the go command: %v", err)
	}
	ctx := context.Background()
	src, cache := t.TempDir(), t.TempDir()
	o := Options{CacheDir: cache}
	module(t, src, "first")

	bin1, remove1, err := Build(ctx, src, nil, nil, o)
	require.NoError(t, err)
	defer remove1()
	require.Contains(t, output(t, bin1), "first")
	cached, err := filepath.Glob(filepath.Join(cache, "*", filepath.Base(src)+".test"))
	require.NoError(t, err)
	require.Len(t, cached, 1)
	before := inode(t, cached[0])

	bin2, remove2, err := Build(ctx, src, nil, nil, o)
	require.NoError(t, err)
	require.NotEqual(t, bin1, bin2, "each caller has a binary of its own")
	require.Equal(t, before, inode(t, cached[0]), "unchanged source: the cached binary was not written again")
	require.Equal(t, before, inode(t, bin2), "the caller's binary is a link of the cached one")
	remove2()
	_, err = os.Stat(bin2)
	require.ErrorIs(t, err, os.ErrNotExist, "remove removes the caller's binary")

	module(t, src, "second")
	bin3, remove3, err := Build(ctx, src, nil, nil, o)
	require.NoError(t, err)
	defer remove3()
	require.NotEqual(t, before, inode(t, cached[0]), "changed source: built again")
	require.Contains(t, output(t, bin3), "second")
	require.Contains(t, output(t, bin1), "first", "a binary handed out before the rebuild is untouched")

	other, err := filepath.Glob(filepath.Join(cache, "*"))
	require.NoError(t, err)
	_, removeTagged, err := Build(ctx, src, []string{"-tags", "x"}, nil, o)
	require.NoError(t, err)
	removeTagged()
	more, err := filepath.Glob(filepath.Join(cache, "*"))
	require.NoError(t, err)
	require.Len(t, more, len(other)+1, "other flags: a binary of their own, so that the two do not replace each other")

	var wg sync.WaitGroup
	outs := make([]string, 3)
	for i := range outs {
		wg.Go(func() {
			bin, remove, err := Build(ctx, src, nil, nil, o)
			if err != nil {
				outs[i] = err.Error()
				return
			}
			defer remove()
			out, err := exec.Command(bin, "-test.run=^TestHello$").CombinedOutput()
			outs[i] = string(out)
			if err != nil {
				outs[i] += err.Error()
			}
		})
	}
	wg.Wait()
	for _, out := range outs {
		require.Contains(t, out, "second")
	}
}

// A build that fails says what the go command said.
func TestBuildSaysWhyItFailed(t *testing.T) {
	src := t.TempDir()
	module(t, src, `"`) // a quote: the test file does not compile
	_, _, err := Build(context.Background(), src, nil, nil, Options{CacheDir: t.TempDir()})
	require.ErrorContains(t, err, "go test -c -vet=off -o")
	require.ErrorContains(t, err, "hello_test.go")
}

// Build does not vet: a test file that go vet refuses (a Printf verb of
// the wrong type) still builds. The lab's CI vets the lab's source; for a
// user, vet before each build of a job or of the exact guest only cost
// time (the guest's, a vet of every package for WebAssembly).
func TestBuildDoesNotVet(t *testing.T) {
	src := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(src, "go.mod"), []byte("module example.com/hello\n\ngo 1.26\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(src, "hello_test.go"), []byte(`package hello

import (
	"fmt"
	"testing"
)

func TestHello(t *testing.T) { fmt.Printf("%d\n", "vetted") }
`), 0o644))
	vet := exec.Command("go", "vet", ".")
	vet.Dir = src
	out, err := vet.CombinedOutput()
	require.Error(t, err, "go vet refuses the file: %s", out)
	bin, remove, err := Build(context.Background(), src, nil, nil, Options{CacheDir: t.TempDir()})
	require.NoError(t, err)
	defer remove()
	require.Contains(t, output(t, bin), "vetted")
}

// A caller's folder left behind by a killed process (older than a day) is
// removed by a later build; a running caller's, however old its binary,
// is not touched while it is younger than that.
func TestBuildRemovesFoldersOfKilledCallers(t *testing.T) {
	src, cache := t.TempDir(), t.TempDir()
	module(t, src, "hello")
	bin, remove, err := Build(context.Background(), src, nil, nil, Options{CacheDir: cache})
	require.NoError(t, err)
	defer remove()
	folder := filepath.Dir(filepath.Dir(bin))
	stale, fresh := filepath.Join(folder, "run-killed"), filepath.Join(folder, "run-running")
	require.NoError(t, os.Mkdir(stale, 0o755))
	require.NoError(t, os.Mkdir(fresh, 0o755))
	old := time.Now().Add(-25 * time.Hour)
	require.NoError(t, os.Chtimes(stale, old, old))
	recent := time.Now().Add(-23 * time.Hour)
	require.NoError(t, os.Chtimes(fresh, recent, recent))

	_, remove2, err := Build(context.Background(), src, nil, nil, Options{CacheDir: cache})
	require.NoError(t, err)
	defer remove2()
	require.NoDirExists(t, stale)
	require.DirExists(t, fresh)
	require.FileExists(t, bin, "the first caller's binary")
}
