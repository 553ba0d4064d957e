package scenarios

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nuvirahub/latencylab/agent/screen/recording"
	"github.com/nuvirahub/latencylab/internal/modroot"
)

// The recorded screens a scenario replays (source: recording): where a
// recording's path counts from (a trace's rule, traceBase), and the check
// that every recording a scenario names is there, is a recording and has
// the offset asked for.

// recordingSource is the source that replays a recording.
const recordingSource = "recording"

// opened keeps the index of each recording file read, by path, while the
// file is unchanged (same size and modification time): the loader checks
// a recording and every session of the scenario replays it, and reading
// an index reads the whole file. The index is only read after, so the
// sessions of a process share it.
var opened sync.Map // path -> openedRecording

type openedRecording struct {
	size int64
	mod  time.Time
	rec  *recording.Recording
	err  error
}

// RecordingPath finds the file of the recording ref (a screen phase's
// File) that the scenario file file (its Scenario.File, "" for one built
// in Go) names, by the rule of TracePath: from the repository's root for
// the library and a scenario built in Go, from the file's own folder for
// any other file, or as it is when absolute. There is no shared: form.
func RecordingPath(file, ref string) (string, error) {
	b := baseOf(file)
	if msg := b.checkRecordingRef(ref); msg != "" {
		return "", errors.New(msg)
	}
	return b.locate(ref)
}

// checkRecordingRef says what is wrong with the way a recording's path is
// written, whatever the files on disk.
func (b traceBase) checkRecordingRef(ref string) string {
	if strings.HasPrefix(ref, SharedPrefix) {
		return fmtf("%q: recordings have no shared: form; expected the recording's path", ref)
	}
	return b.checkRef(ref)
}

// OpenRecording returns the index of the recording ref that the scenario
// file file names (RecordingPath), read once per process while the file
// is unchanged. The index is shared: only read it.
func OpenRecording(file, ref string) (*recording.Recording, error) {
	p, err := RecordingPath(file, ref)
	if err != nil {
		return nil, err
	}
	return openRecording(p)
}

func openRecording(p string) (*recording.Recording, error) {
	fi, err := os.Stat(p)
	switch {
	case err != nil:
		return nil, err
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a file: expected a screen recording (.labrec)", p)
	}
	if v, ok := opened.Load(p); ok {
		if o := v.(openedRecording); o.size == fi.Size() && o.mod.Equal(fi.ModTime()) {
			return o.rec, o.err
		}
	}
	rec, err := recording.Open(p)
	opened.Store(p, openedRecording{fi.Size(), fi.ModTime(), rec, err})
	return rec, err
}

// recordingCheck reports what is wrong with the recording of a screen
// phase written at p: its path, its file, and an offset not below the
// recording's length. Like the traces' check, it does nothing unless the
// scenario names a recording.
func (c *traceCheck) recording(v validator, p string, ph ScreenPhase) {
	v.nonNeg(p+".offset", ph.Offset)
	if ph.File == "" {
		v.rep(p+".file", []string{p + ".source"}, missing("screen_phase", "file"))
		return
	}
	if msg := c.rule().checkRecordingRef(ph.File); msg != "" {
		v.rep(p+".file", nil, msg)
		return
	}
	path, err := c.rule().locate(ph.File)
	switch {
	case errors.Is(err, modroot.ErrNotFound):
		return // the run says so
	case err != nil:
		v.rep(p+".file", nil, err.Error())
		return
	}
	rec, err := openRecording(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && filepath.IsAbs(ph.File):
		v.rep(p+".file", nil, "no recording file at "+path)
	case errors.Is(err, fs.ErrNotExist):
		v.rep(p+".file", nil, fmtf("no recording file at %s: %s", path, c.rule().rule()))
	case err != nil:
		v.rep(p+".file", nil, "bad recording file: "+strings.TrimPrefix(err.Error(), path+": "))
	default:
		length := rec.Duration() - rec.Frames[0].At
		if ph.Offset >= length {
			v.errf(p+".offset", []string{p + ".file"}, "%s out of range: expected an offset below the recording's length, %s",
				FormatDuration(ph.Offset), FormatDuration(length.Truncate(time.Millisecond)))
		}
	}
}

// absoluteRecordings writes the relative recording paths of a scenario
// loaded from a file outside the library as absolute ones, as
// absoluteTraces does the traces', for the same reason: the scenario
// travels as YAML to workers and exact instances.
func absoluteRecordings(s *Scenario) {
	absolute := absoluteIn(s)
	fix := func(phases []ScreenPhase) {
		for i := range phases {
			phases[i].File = absolute(phases[i].File)
		}
	}
	fix(s.Screen)
	for i := range s.Traffic {
		fix(s.Traffic[i].Screen)
	}
}
