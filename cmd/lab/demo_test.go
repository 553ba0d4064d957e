package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDemoRefusesBadFlags(t *testing.T) {
	for args, want := range map[string][]string{
		"-duration 0s": {"-duration", "0s"},
		"-loss 120":    {"-loss", "120"},
		"-rate -5":     {"-rate", "-5"},
		"unexpected":   {"extra"},
	} {
		_, err := parseDemo(want, &bytes.Buffer{})
		require.ErrorContains(t, err, args, "%v", want)
	}
}

// The demo runs end to end in real time over loopback (a short run).
func TestDemoRunsAQUICTransferThroughTheProxy(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, demo([]string{"-duration", "1500ms", "-delay", "5ms", "-loss", "0", "-rate", "20"}, &out))
	require.Contains(t, out.String(), "result: ")
	require.Contains(t, out.String(), "forward link: offered")
	require.Regexp(t, `\n   1s  forward `, out.String(), "a status line each second")
}
