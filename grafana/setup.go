package grafana

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// setUp is the set-up a team needs beside its runs, built into the lab so
// that a lab binary writes it anywhere (WriteSetUp).
//
//go:embed compose.yaml prometheus.yml dashboards/*.json provisioning
var setUp embed.FS

// ErrWouldOverwrite refuses to replace a file that differs from the
// lab's, unless asked to (a team's edited dashboard is not lost).
var ErrWouldOverwrite = errors.New("grafana: a file there differs from the lab's")

// WriteSetUp writes the Grafana set-up into dir: compose.yaml,
// prometheus.yml, the provisioning and the dashboards, and the empty
// import folder the compose file mounts. A file already there with the
// same contents is left; one that differs is replaced only with
// overwrite, else the whole write is refused before anything is written.
// It returns the files it wrote.
func WriteSetUp(dir string, overwrite bool) ([]string, error) {
	var files []string
	err := fs.WalkDir(setUp, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	var differ []string
	for _, f := range files {
		want, _ := setUp.ReadFile(f)
		have, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f)))
		if err == nil && !bytes.Equal(have, want) {
			differ = append(differ, filepath.Join(dir, filepath.FromSlash(f)))
		}
	}
	if len(differ) > 0 && !overwrite {
		return nil, fmt.Errorf("%w: %v (-force replaces them)", ErrWouldOverwrite, differ)
	}
	var wrote []string
	for _, f := range files {
		data, _ := setUp.ReadFile(f)
		p := filepath.Join(dir, filepath.FromSlash(f))
		if have, err := os.ReadFile(p); err == nil && bytes.Equal(have, data) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return wrote, err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return wrote, err
		}
		wrote = append(wrote, p)
	}
	return wrote, os.MkdirAll(filepath.Join(dir, "import"), 0o755)
}
