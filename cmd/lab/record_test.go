package main

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
