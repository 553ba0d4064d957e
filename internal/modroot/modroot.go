// Package modroot finds the lab's module root: the folder with go.mod at or
// above the working directory. Tests and jobs run in their package's
// folder, while the paths users write (testdata/..., docs/..., out/...)
// are the root's.
package modroot

import (
	"errors"
	"os"
	"path/filepath"
)

// ErrNotFound says no go.mod lies at or above the working directory.
var ErrNotFound = errors.New("no go.mod at or above the working directory: run inside the lab's module")

// Find returns the module root above the working directory.
func Find() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", ErrNotFound
		}
		dir = parent
	}
}
