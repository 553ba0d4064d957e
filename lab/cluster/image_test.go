package cluster

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/internal/modroot"
)

// The image (the repository's Dockerfile) is what the manifests expect:
// the Go of go.mod on Debian bookworm, the source in the Jobs' working
// directory, lab on PATH, no cgo, and the build cache warm for exactly
// what lab sweep builds. No Docker engine is needed: the file is read, not
// built (docs/cluster.md says what was run).
func TestDockerfile(t *testing.T) {
	root, err := modroot.Find()
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	require.NoError(t, err)
	// The instructions, continuation lines joined, comments left out.
	var lines []string
	for _, l := range strings.Split(strings.ReplaceAll(string(data), "\\\n", " "), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, strings.Join(strings.Fields(l), " "))
		}
	}
	has := func(line string) {
		t.Helper()
		require.Contains(t, lines, line)
	}
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	goVersion := regexp.MustCompile(`(?m)^go (1\.[0-9]+)`).FindStringSubmatch(string(mod))
	require.NotNil(t, goVersion)
	require.Equal(t, "FROM golang:"+goVersion[1]+"-bookworm AS cluster", lines[0], "the cluster's stage first: the Go of go.mod, on Debian bookworm")
	has("ENV CGO_ENABLED=0")
	has("WORKDIR " + imageWorkdir)
	has("COPY . .")
	has("RUN go build -o /usr/local/bin/lab ./cmd/lab")

	// The caches warmed by a session run as a shard runs one, so that what
	// is warmed is what a shard builds, whatever flags the lab builds with.
	has("RUN lab sweep -scenarios abr-lossy -threshold 60ms -seeds 1 -warmup 1s -duration 2s -out /tmp/warm && rm -rf /tmp/warm")
	require.Less(t, slices.Index(lines, "RUN go build -o /usr/local/bin/lab ./cmd/lab"),
		slices.Index(lines, "RUN lab sweep -scenarios abr-lossy -threshold 60ms -seeds 1 -warmup 1s -duration 2s -out /tmp/warm && rm -rf /tmp/warm"),
		"lab is built before the warm sweep runs it")

	// The default image, the last stage: the release alone, no Go.
	var froms []int
	for i, l := range lines {
		if strings.HasPrefix(l, "FROM ") {
			froms = append(froms, i)
		}
	}
	require.Len(t, froms, 3, "the cluster's stage, the release's build, the slim image")
	require.Equal(t, "FROM golang:"+goVersion[1]+"-bookworm AS release", lines[froms[1]])
	require.Contains(t, lines[froms[1]:froms[2]], "RUN go run ./internal/release/mkdist -out /dist linux/${TARGETARCH} && mv /dist/lab-linux-${TARGETARCH} /dist/lab",
		"the release built as make dist builds it")
	slim := lines[froms[2]:]
	require.Equal(t, "FROM debian:bookworm-slim AS lab", slim[0])
	require.Contains(t, slim, "COPY --from=release /dist/lab /usr/local/bin/lab")
	require.Contains(t, slim, `ENTRYPOINT ["lab"]`)
	for _, l := range slim {
		require.NotContains(t, l, "golang", "no toolchain in the slim image")
	}

	ignore, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	require.NoError(t, err)
	for _, p := range []string{"out/", "*.test", ".git"} {
		require.Contains(t, strings.Split(string(ignore), "\n"), p)
	}
}
