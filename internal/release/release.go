// Package release builds the lab as a release: one lab binary per platform
// that runs every job with no Go toolchain and no source beside it.
//
// Two things make a plain go build of cmd/lab depend on the checkout,
// and a release build provides both:
//
//   - Native sessions are seeded by testing/cryptotest, which works only in
//     a test binary (testing.Testing): QUIC's and TLS's randomness,
//     unseeded, makes two runs of a seed differ. The release is linked with
//     -X testing.testBinary=1, as go test links its binaries, so the jobs
//     the lab starts in copies of itself are seeded as lab/jobs's test
//     binary's are. Nothing else in the lab or its dependencies reads
//     testing.Testing.
//   - Exact sessions run the guest, the lab compiled to WebAssembly
//     (lab/exact). The release builds it from the same source, exactly as
//     a checkout does (exact.Build), embeds it (the embedguest tag, through
//     go build -overlay, so nothing is written into the source tree), and
//     links its SHA-256 in (exact.ShippedGuestSHA), which the binary checks
//     before it runs an exact session. The guest is WebAssembly, the same
//     for every platform, so a release's exact results are the checkout's,
//     byte for byte.
package release

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/nuvirahub/latencylab/lab/exact"
)

// Options say what Build builds.
type Options struct {
	// Root is the module's root.
	Root string
	// Out is the binary's path.
	Out string
	// GOOS and GOARCH are the platform's; empty is the host's.
	GOOS, GOARCH string
	// NoCgo builds without cgo: a binary that needs no C library at run
	// time (the OpenH264 presets are then unavailable, as in exact
	// sessions), and the only way to build for another architecture here.
	NoCgo bool
	// Trimpath leaves the build machine's paths out of the binary, as a
	// release should; a test leaves it off to reuse the build cache.
	Trimpath bool
	// Log, when set, is told each step.
	Log io.Writer
}

// Built is what Build made.
type Built struct {
	// Binary is the lab binary's path; GuestSHA the SHA-256, in hex, of
	// the guest built into it.
	Binary, GuestSHA string
	// GuestBytes and BinaryBytes are their sizes.
	GuestBytes, BinaryBytes int64
}

// ShippedGuest is the path, relative to the module's root, at which the
// embedguest build finds the guest (lab/exact's go:embed pattern).
const ShippedGuest = "lab/exact/shipped/guest.wasm"

// Build builds the guest from root's source and the lab binary with it.
func Build(ctx context.Context, o Options) (*Built, error) {
	root, err := filepath.Abs(o.Root)
	if err != nil {
		return nil, err
	}
	logf := func(format string, args ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, format, args...)
		}
	}
	wasm, err := exact.Build(ctx, root)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(wasm)
	b := &Built{GuestSHA: hex.EncodeToString(sum[:]), GuestBytes: int64(len(wasm))}
	logf("release: guest %.1f MB, sha256 %.16s\n", float64(len(wasm))/1e6, b.GuestSHA)

	tmp, err := os.MkdirTemp("", "latencylab-dist-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	guest := filepath.Join(tmp, "guest.wasm")
	if err := os.WriteFile(guest, wasm, 0o644); err != nil {
		return nil, err
	}
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(root, filepath.FromSlash(ShippedGuest)): guest}})
	if err != nil {
		return nil, err
	}
	overlayFile := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(overlayFile, overlay, 0o644); err != nil {
		return nil, err
	}
	out, err := filepath.Abs(o.Out)
	if err != nil {
		return nil, err
	}
	ldflags := "-X testing.testBinary=1 -X github.com/nuvirahub/latencylab/lab/exact.ShippedGuestSHA=" + b.GuestSHA
	args := []string{"build", "-tags", "embedguest", "-overlay", overlayFile, "-ldflags", ldflags, "-o", out}
	if o.Trimpath {
		args = append(args, "-trimpath")
	}
	cmd := exec.CommandContext(ctx, "go", append(args, "./cmd/lab")...)
	cmd.Dir = root
	cmd.Env = os.Environ()
	if o.GOOS != "" {
		cmd.Env = append(cmd.Env, "GOOS="+o.GOOS)
	}
	if o.GOARCH != "" {
		cmd.Env = append(cmd.Env, "GOARCH="+o.GOARCH)
	}
	if o.NoCgo {
		cmd.Env = append(cmd.Env, "CGO_ENABLED=0")
	}
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("release: go %s: %w\n%s", strings.Join(args, " "), err, msg)
	}
	st, err := os.Stat(out)
	if err != nil {
		return nil, err
	}
	b.Binary, b.BinaryBytes = out, st.Size()
	logf("release: %s, %.1f MB\n", out, float64(b.BinaryBytes)/1e6)
	return b, nil
}
