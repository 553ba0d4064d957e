package guest

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/lab/sessionproc"
	"github.com/nuvirahub/latencylab/scenarios"
)

// TestGuest serves sessions from standard input when GuestEnv is set (in
// an instance lab/exact started, whose tests check the answers).
// Run as a plain test, it serves one short session natively through the
// same code, between buffers, and checks the answer a host would read.
func TestGuest(t *testing.T) {
	if os.Getenv(GuestEnv) != "" {
		if err := sessionproc.Serve(t, os.Stdin, os.Stdout, ResultPrefix); err != nil {
			t.Fatal(err)
		}
		return
	}
	lib, err := scenarios.Library()
	require.NoError(t, err)
	var sc *scenarios.Scenario
	for _, s := range lib {
		if s.Name == "lan-animation" {
			c := *s
			sc = &c
		}
	}
	require.NotNil(t, sc)
	sc.Duration, sc.Expect = time.Second, nil
	item, err := sessionproc.NewItem(sc)
	require.NoError(t, err)
	line, err := json.Marshal(item)
	require.NoError(t, err)

	var out bytes.Buffer
	out.WriteString("=== RUN   TestGuest\n") // what else a test binary prints
	require.NoError(t, sessionproc.Serve(t, bytes.NewReader(append(line, '\n')), &out, ResultPrefix))
	out.WriteString("PASS\n")
	res, err := sessionproc.FindResult(out.Bytes(), ResultPrefix)
	require.NoError(t, err)
	require.Empty(t, res.Err)
	require.Equal(t, "lan-animation", res.Result.Scenario)
	require.Equal(t, time.Second, res.Result.Duration)
	require.Positive(t, res.Result.Summary.Displayed)

	_, err = sessionproc.FindResult([]byte("PASS\n"), ResultPrefix)
	require.ErrorIs(t, err, sessionproc.ErrNoResult)
	err = sessionproc.Serve(t, strings.NewReader("{not json\n"), &out, ResultPrefix)
	require.ErrorContains(t, err, "reading an item")
}
