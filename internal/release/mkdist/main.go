// Command mkdist builds the lab's release (make dist): a lab binary for
// each platform asked, each with its exact guest built in (package
// internal/release), in one folder.
//
//	go run ./internal/release/mkdist -out dist linux/amd64 linux/arm64
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nuvirahub/latencylab/internal/modroot"
	"github.com/nuvirahub/latencylab/internal/release"
)

func main() {
	out := flag.String("out", "dist", "the folder for the binaries, lab-GOOS-GOARCH each")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: go run ./internal/release/mkdist [-out DIR] GOOS/GOARCH...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	root, err := modroot.Find()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkdist:", err)
		os.Exit(1)
	}
	for _, platform := range flag.Args() {
		goos, goarch, ok := strings.Cut(platform, "/")
		if !ok {
			fmt.Fprintf(os.Stderr, "mkdist: %q: expected GOOS/GOARCH, e.g. linux/amd64\n", platform)
			os.Exit(2)
		}
		// Without cgo: a binary that needs no C library where it runs,
		// and one that cross-compiles without a C cross-compiler.
		b, err := release.Build(context.Background(), release.Options{
			Root: root, Out: filepath.Join(*out, "lab-"+goos+"-"+goarch), GOOS: goos, GOARCH: goarch,
			NoCgo: true, Trimpath: true, Log: os.Stderr,
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "mkdist:", err)
			os.Exit(1)
		}
		fmt.Printf("%s  %.1f MB  guest sha256 %s\n", b.Binary, float64(b.BinaryBytes)/1e6, b.GuestSHA)
	}
}
