package main

import (
	"io"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every listener the command line opens binds loopback unless told
// otherwise (docs/security.md): the metrics of lab run, the proxy's
// datagram port and its HTTP API.
func TestDefaultAddresses(t *testing.T) {
	run, err := parseRun([]string{"-scenario", "lan-animation"}, io.Discard)
	require.NoError(t, err)
	proxy, err := parseProxy([]string{"-scenario", "lan-animation", "-target", "127.0.0.1:5000"}, io.Discard)
	require.NoError(t, err)
	shell, err := parseShell([]string{"-scenario", "lan-animation"}, io.Discard)
	require.NoError(t, err)
	require.Empty(t, shell.metrics, "lab shell serves /metrics only when asked")
	for what, addr := range map[string]string{
		"lab run -metrics":  run.metrics,
		"lab proxy -listen": proxy.listen,
		"lab proxy -api":    proxy.api,
	} {
		ap, err := netip.ParseAddrPort(addr)
		require.NoError(t, err, what)
		require.True(t, ap.Addr().IsLoopback(), "%s defaults to %s, not loopback", what, addr)
	}
}
