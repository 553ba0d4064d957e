package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/agent/screen/recording"
	"github.com/nuvirahub/latencylab/agent/screen/recording/recordingtest"
	"github.com/nuvirahub/latencylab/lab/record"
)

func TestParseRecord(t *testing.T) {
	f, err := parseRecord([]string{"-kind", "idle", "-out", "x.labrec", "-duration", "3s", "-seed", "7", "-size", "1920x1080"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, recordFlags{kind: "idle", size: "1920x1080", out: "x.labrec", duration: 3 * time.Second, rate: 60, seed: 7}, f)
	_, err = parseRecord([]string{"-out", "x"}, io.Discard)
	require.ErrorContains(t, err, "record: -kind is required: one of terminal-typing, editor-typing,")
	_, err = parseRecord([]string{"-kind", "idle"}, io.Discard)
	require.EqualError(t, err, "record: -out is required: the recording's file")
	_, err = parseRecord([]string{"-kind", "idle", "-out", "x", "extra"}, io.Discard)
	require.ErrorContains(t, err, `unexpected arguments ["extra"]`)
}

// -list names every kind; mistakes are refused before anything starts.
func TestRecordCommand(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, recordRun(t.Context(), []string{"-list"}, &out, io.Discard))
	for _, k := range record.Kinds() {
		require.Contains(t, out.String(), k.Name+" ")
	}
	err := recordRun(t.Context(), []string{"-kind", "idle", "-out", "x", "-size", "big"}, io.Discard, io.Discard)
	require.EqualError(t, err, `record: -size "big": WIDTHxHEIGHT, like 1280x720`)
	err = recordRun(t.Context(), []string{"-kind", "spreadsheet", "-out", "x"}, io.Discard, io.Discard)
	require.ErrorContains(t, err, `record: unknown kind "spreadsheet"`)
}

// -upgrade rewrites older recordings in place and says what it did; a
// current one is left alone; a file that is no recording is named.
func TestRecordUpgrade(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.labrec")
	recordingtest.Write(t, path, recording.Meta{Width: 64, Height: 64, Refresh: 60, Kind: "test"}, func(add recordingtest.Add) {
		f := codec.NewFrame(64, 64)
		add(0, f, nil)
		g := f.Clone()
		g.Pix[0] = 0xffffff
		add(time.Second/60, g, []codec.Rect{{W: 1, H: 1}})
	})
	var out bytes.Buffer
	require.NoError(t, recordRun(t.Context(), []string{"-upgrade", path}, &out, io.Discard))
	require.Equal(t, path+": format 2 already, left alone; 2 frames, 0.0% of the changed pixels explained by a shift, 100% of the damaged pixels changed\n", out.String())
	_, err := parseRecord([]string{"-upgrade"}, io.Discard)
	require.EqualError(t, err, "record: -upgrade needs the recordings' files after the flags")
	bad := filepath.Join(dir, "b.labrec")
	require.NoError(t, os.WriteFile(bad, []byte("hello"), 0o644))
	err = recordRun(t.Context(), []string{"-upgrade", path, bad}, io.Discard, io.Discard)
	require.EqualError(t, err, "record: "+bad+": not a screen recording (no LABSCREC header)")
}
