package recording

import (
	"fmt"
	"os"
	"path/filepath"
)

// Upgraded is what Upgrade did to one file.
type Upgraded struct {
	// From is the file's format version before, To after (equal when the
	// file was already current and left alone).
	From, To int
	// Frames is the recording's frame count.
	Frames int
	// Moved is the share of the recording's changed pixels, over its
	// frames after the first, that a shift of the frame before explains:
	// Frame.Moved weighted by each frame's Changed.
	Moved float64
	// Fill is the share of the damaged pixels that changed, over the
	// frames after the first that changed any: the X server's damage
	// covers what was drawn, often much more than what changed.
	Fill float64
}

// Upgrade rewrites a recording of an older format in the current one, in
// place (Recording.Rewrite: the same pixels, instants and damage, with
// what the older format did not measure measured). The new file is written
// beside the old and renamed over it, so an error leaves the old file as
// it was. A file already current is left alone.
func Upgrade(path string) (Upgraded, error) {
	rec, err := Open(path)
	if err != nil {
		return Upgraded{}, err
	}
	u := Upgraded{From: rec.Version(), To: rec.Version(), Frames: len(rec.Frames)}
	if rec.Version() != formatVersion {
		tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".upgrade-*")
		if err != nil {
			return u, fmt.Errorf("recording: %w", err)
		}
		defer os.Remove(tmp.Name()) // gone after the rename; left by an error
		if err := rec.Rewrite(tmp); err != nil {
			tmp.Close()
			return u, fmt.Errorf("recording: rewriting %s: %w", path, err)
		}
		if err := tmp.Close(); err != nil {
			return u, fmt.Errorf("recording: %w", err)
		}
		if err := os.Rename(tmp.Name(), path); err != nil {
			return u, fmt.Errorf("recording: %w", err)
		}
		if rec, err = Open(path); err != nil {
			return u, err
		}
		u.To = rec.Version()
	}
	var moved, changed, damaged float64
	for i := range rec.Frames[1:] {
		f := &rec.Frames[1+i]
		if !(f.Changed > 0) {
			continue
		}
		moved += f.Moved * f.Changed
		changed += f.Changed
		damaged += f.DamagedShare(rec.Meta)
	}
	if changed > 0 {
		u.Moved, u.Fill = moved/changed, changed/damaged
	}
	return u, nil
}
