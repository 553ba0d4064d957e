package result

import (
	"fmt"
	"os"

	"github.com/nuvirahub/latencylab/internal/schemaver"
)

// Parse reads one run's JSON (Version); name is used in
// errors.
func Parse(name string, data []byte) (*Run, error) {
	var r Run
	if err := schemaver.Decode(name, data, Version, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Read reads one run's JSON file.
func Read(path string) (*Run, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Write writes one run's JSON file.
func Write(path string, r *Run) error {
	if r.Schema != Version {
		return fmt.Errorf("%s: result of schema %q, this lab writes %q", path, r.Schema, Version)
	}
	return schemaver.WriteJSON(path, r)
}
