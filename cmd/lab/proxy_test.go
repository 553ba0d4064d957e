package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// lab proxy as a user runs it: a program's datagrams cross the scenario's
// network to their target and back, GET /status counts them, PUT changes a
// direction's impairments, and a mistake in the phase is answered with the
// loader's message.
func TestProxyCommand(t *testing.T) {
	client, api, stop := startProxy(t)
	_, err := client.Write([]byte("hello"))
	require.NoError(t, err)
	require.NoError(t, client.SetReadDeadline(time.Now().Add(10*time.Second))) // a bound on failure, not a wait
	buf := make([]byte, 64)
	n, err := client.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "hello", string(buf[:n]))

	status := func() proxyStatus {
		resp, err := http.Get(api + "/status")
		require.NoError(t, err)
		defer resp.Body.Close()
		var st proxyStatus
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
		return st
	}
	st := status()
	require.Equal(t, uint64(1), st.Up.Delivered.Packets)
	require.Equal(t, uint64(1), st.Down.Delivered.Packets)
	require.Equal(t, 1, st.Clients)
	require.Equal(t, "scenario lan-animation", st.Now["down"])

	put := func(path, body string) (int, string) { return putPhase(t, api+path, body) }
	code, msg := put("/down", "{delay: 50ms, loss: 2%}")
	require.Equal(t, http.StatusOK, code, msg)
	require.Equal(t, "{delay: 50ms, loss: 2%}", status().Now["down"])
	require.Equal(t, "scenario lan-animation", status().Now["up"], "only the direction asked for")

	code, msg = put("/both", "{delay: 5}")
	require.Equal(t, http.StatusBadRequest, code)
	require.Equal(t, "line 1: delay: 5 is missing a unit: expected a duration like 25ms, 1.5s or 500us\n", msg)
	code, _ = put("/sideways", "{delay: 5ms}")
	require.Equal(t, http.StatusNotFound, code)

	require.Contains(t, stop(), "proxy: done; up 1 packets in, 1 out; down 1 in, 1 out")
}

// startProxy runs lab proxy with lan-animation's network in front of a UDP
// echo server on loopback; it returns a client connected to the proxy, the
// API's base URL, and stop, which ends the proxy and returns what it
// printed.
func startProxy(t *testing.T) (client net.Conn, api string, stop func() string) {
	t.Helper()
	echo, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	t.Cleanup(func() { echo.Close() })
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := echo.ReadFrom(buf)
			if err != nil {
				return
			}
			echo.WriteTo(buf[:n], from)
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	addrs := make(chan [2]string, 1)
	done := make(chan error, 1)
	var out bytes.Buffer
	go func() {
		done <- proxyCmd(ctx, []string{"-scenario", "lan-animation", "-target", echo.LocalAddr().String()}, &out,
			func(p, a string) { addrs <- [2]string{p, a} })
	}()
	a := <-addrs
	client, err = net.Dial("udp", a[0])
	require.NoError(t, err)
	t.Cleanup(func() { client.Close() })
	stopped := false
	stop = func() string {
		if !stopped {
			stopped = true
			cancel()
			require.NoError(t, <-done)
		}
		return out.String()
	}
	t.Cleanup(func() { stop() })
	return client, "http://" + a[1], stop
}

// putPhase PUTs a phase to the proxy's API and returns the status and body.
func putPhase(t *testing.T, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, url, strings.NewReader(body))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(msg)
}

// PUT /both gives each direction instances of its own: a rate's queue and a
// loss model's state belong to one link. Traffic then crosses both ways at
// once (under -race, a shared instance is a reported race, as it was).
func TestProxyBothGivesEachDirectionItsOwnImpairments(t *testing.T) {
	up, down, err := phaseImpairments([]byte("{delay: 1ms, rate: 200Mbit/s, queue: {packets: 1000}, loss: 1%}"))
	require.NoError(t, err)
	require.Len(t, down, len(up))
	for i := range up {
		require.NotSame(t, up[i], down[i], "%s: one instance in both directions", up[i].Kind())
	}

	client, api, stop := startProxy(t)
	code, msg := putPhase(t, api+"/both", "{delay: 1ms, rate: 200Mbit/s, queue: {packets: 1000}, loss: 1%}")
	require.Equal(t, http.StatusOK, code, msg)

	// 2000 datagrams to the echo server, each echo crossing both
	// directions; the reader stops at the first quiet second or when all
	// are back.
	const n = 2000
	payload := bytes.Repeat([]byte{'x'}, 1200)
	got := make(chan int, 1)
	go func() {
		buf := make([]byte, 2048)
		count := 0
		for count < n {
			client.SetReadDeadline(time.Now().Add(time.Second)) // a bound on the loop, not a wait
			if _, err := client.Read(buf); err != nil {
				break
			}
			count++
		}
		got <- count
	}()
	for range n {
		_, err := client.Write(payload)
		require.NoError(t, err)
	}
	back := <-got
	// Sent unpaced, many overflow a socket's buffer on the way; what
	// matters is that both directions carried traffic at once.
	require.Greater(t, back, 100, "echoes back through both directions")
	require.Less(t, back, n, "1% loss each way drops some")
	out := stop()
	require.Contains(t, out, "proxy: done; up 2000 packets in")
}

func TestProxyFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-target", "127.0.0.1:1"}, "-scenario is required"},
		{[]string{"-scenario", "lan-animation"}, "-target is required"},
		{[]string{"-scenario", "nope", "-target", "127.0.0.1:1"}, `no scenario "nope" in the library`},
		{[]string{"-scenario", "lan-animation", "-target", "127.0.0.1:1", "extra"}, `unexpected argument "extra"`},
	} {
		err := proxyCmd(context.Background(), tc.args, io.Discard, nil)
		require.ErrorContains(t, err, tc.want, "%v", tc.args)
	}
}

// The API answers every bad request with a clear 4xx: a body over 64 KB,
// YAML that does not parse, a phase that is not one, an unknown path; and
// its server cuts off slow clients.
func TestProxyAPIRefusesBadRequests(t *testing.T) {
	_, api, _ := startProxy(t)
	for _, tc := range []struct {
		path, body string
		code       int
		msg        string
	}{
		{"/down", "{delay: 5ms, " + strings.Repeat(" ", 70<<10) + "}", http.StatusRequestEntityTooLarge, "a phase is at most 65536 bytes\n"},
		{"/down", "{delay: [", http.StatusBadRequest, "line 1"},
		{"/up", "- {delay: 5ms}\n- {delay: 6ms}", http.StatusBadRequest, ""},
		{"/up", "{colour: red}", http.StatusBadRequest, "colour"},
		{"/status", "", http.StatusNotFound, "GET /status, or PUT /up, /down or /both"},
	} {
		code, msg := putPhase(t, api+tc.path, tc.body)
		require.Equal(t, tc.code, code, "%s %.40q: %s", tc.path, tc.body, msg)
		require.Contains(t, msg, tc.msg)
	}
	hs := newAPIServer(http.NotFoundHandler())
	require.Positive(t, hs.ReadHeaderTimeout)
	require.Positive(t, hs.ReadTimeout)
	require.Positive(t, hs.WriteTimeout)
	require.Positive(t, hs.IdleTimeout)
}

// Whatever a client PUTs, the API answers without panicking: a phase for
// each direction, or an error.
func FuzzProxyPhase(f *testing.F) {
	for _, s := range []string{"{delay: 50ms, loss: 2%}", "{rate: 5Mbit/s, queue: {packets: 100}}", "{delay: 5}", "", "- a\n- b", "{jitter: {spread: 10ms, correlation: 50%}}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		up, down, err := phaseImpairments(body)
		if err == nil && len(up) != len(down) {
			t.Fatalf("%q: %d impairments up, %d down", body, len(up), len(down))
		}
	})
}
