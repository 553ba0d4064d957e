package record

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/nuvirahub/latencylab/agent/screen/recording"
)

// ManifestFile is the corpus folder's list of its recordings.
const ManifestFile = "manifest.yaml"

// Manifest lists a folder's recordings with what each file's own
// metadata and index say, so that the corpus can be read about (and
// checked) without opening the files.
type Manifest struct {
	// About says what the folder is.
	About string `yaml:"about"`
	// Recordings are the files, by name.
	Recordings []Entry `yaml:"recordings"`
	// TotalBytes is the files' sizes together.
	TotalBytes int64 `yaml:"total_bytes"`
}

// Entry is one recording of a Manifest.
type Entry struct {
	// File is the recording's name in the folder.
	File string `yaml:"file"`
	// Kind, App, Script and Command are the recording's Meta.
	Kind string `yaml:"kind"`
	App  string `yaml:"app"`
	// Size is the screen's, WIDTHxHEIGHT; Refresh its sampling rate in Hz.
	Size    string  `yaml:"size"`
	Refresh float64 `yaml:"refresh"`
	// Duration is the recording's length in seconds (the last frame's
	// instant plus a tick), to the millisecond.
	Duration float64 `yaml:"duration_s"`
	Frames   int     `yaml:"frames"`
	Bytes    int64   `yaml:"bytes"`
	Script   string  `yaml:"script"`
	Command  string  `yaml:"command"`
	// Shrunk says what the kind gave up to keep the file small, if
	// anything.
	Shrunk string `yaml:"shrunk,omitempty"`
}

// EntryOf is a recording's manifest entry, from its file.
func EntryOf(path string) (Entry, error) {
	rec, err := recording.Open(path)
	if err != nil {
		return Entry{}, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return Entry{}, err
	}
	m := rec.Meta
	e := Entry{File: filepath.Base(path), Kind: m.Kind, App: m.App, Size: fmt.Sprintf("%dx%d", m.Width, m.Height), Refresh: m.Refresh,
		Duration: math.Round(rec.Duration().Seconds()*1000) / 1000, Frames: len(rec.Frames), Bytes: st.Size(), Script: m.Script, Command: m.Command}
	if k, err := Lookup(m.Kind); err == nil {
		e.Shrunk = k.Shrunk
	}
	return e, nil
}

// ManifestOf is the manifest of every .labrec file in dir, by name.
func ManifestOf(dir string) (*Manifest, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.labrec"))
	if err != nil {
		return nil, err
	}
	slices.Sort(files)
	m := &Manifest{About: "Real desktop applications recorded under Xvfb with lab record, losslessly, with the damage X reported " +
		"(format: agent/screen/recording; how they were made: docs/recording.md). Each command remakes its file from the repository's root."}
	for _, f := range files {
		e, err := EntryOf(f)
		if err != nil {
			return nil, err
		}
		m.Recordings = append(m.Recordings, e)
		m.TotalBytes += e.Bytes
	}
	return m, nil
}

// WriteManifest writes dir's manifest.yaml from its recordings.
func WriteManifest(dir string) (*Manifest, error) {
	m, err := ManifestOf(dir)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("# Written by lab record -manifest " + strings.TrimSuffix(dir, "/") + " from the recordings' own metadata and index;\n" +
		"# lab/record's TestManifest checks it against them.\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return m, os.WriteFile(filepath.Join(dir, ManifestFile), b.Bytes(), 0o644)
}

// ReadManifest reads dir's manifest.yaml, strictly: an unknown field is
// an error.
func ReadManifest(dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ManifestFile), err)
	}
	return &m, nil
}
