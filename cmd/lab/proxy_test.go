package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/scenarios"
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

// The proxy carries ECN when -ecn asks or the scenario's session is
// ECN-capable, and not otherwise.
func TestProxyECN(t *testing.T) {
	for _, c := range []struct {
		flag, scenario, want bool
	}{{false, false, false}, {true, false, true}, {false, true, true}} {
		args := []string{"-scenario", "x", "-target", "127.0.0.1:1"}
		if c.flag {
			args = append(args, "-ecn")
		}
		f, err := parseProxy(args, io.Discard)
		require.NoError(t, err)
		sc := &scenarios.Scenario{}
		if c.scenario {
			sc.ECN = "classic"
		}
		require.Equal(t, c.want, proxyConfig(f, sc, netem.LinkConfig{}, netem.LinkConfig{}).ECN, "%+v", c)
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

// pipeListener hands the server the ends of in-memory pipes, so a test in a
// synctest bubble can hold a client past the API's timeouts in virtual time.
type pipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

// dial connects a client: its end of a new pipe.
func (l *pipeListener) dial() net.Conn {
	client, server := net.Pipe()
	l.conns <- server
	return client
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error   { close(l.closed); return nil }
func (l *pipeListener) Addr() net.Addr { return &net.UnixAddr{Name: "pipe", Net: "pipe"} }

// A slow client is cut off at the API's timeouts, measured in virtual time:
// one that stops half-way through its headers is disconnected when the
// header timeout passes (Go's server closes such a connection without an
// answer); one that stops half-way through its body is answered 408 when the
// read timeout passes; and a client that sends promptly is still served.
func TestProxyAPICutsOffSlowClients(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		l := newPipeListener()
		hs := newAPIServer(&proxyServer{proxy: nil, now: map[string]string{}})
		served := make(chan error, 1)
		go func() { served <- hs.Serve(l) }()

		// Half the headers, then nothing.
		c := l.dial()
		_, err := io.WriteString(c, "PUT /up HTTP/1.1\r\nHost: lab\r\n")
		require.NoError(t, err)
		answer, err := io.ReadAll(c)
		require.NoError(t, err)
		require.Empty(t, answer, "a slow header is closed without an answer")
		require.Equal(t, apiHeaderTimeout, time.Since(start))
		c.Close()

		// Whole headers, half the body, then nothing.
		start = time.Now()
		c = l.dial()
		_, err = io.WriteString(c, "PUT /up HTTP/1.1\r\nHost: lab\r\nContent-Length: 100\r\n\r\n{delay: ")
		require.NoError(t, err)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		require.Equal(t, http.StatusRequestTimeout, resp.StatusCode, "%s", body)
		require.Equal(t, "the body did not arrive within 10s\n", string(body))
		require.Equal(t, apiReadTimeout, time.Since(start))
		c.Close()

		// A prompt client with a bad phase still gets the loader's message:
		// the server is not left holding anything.
		c = l.dial()
		_, err = io.WriteString(c, "PUT /up HTTP/1.1\r\nHost: lab\r\nContent-Length: 13\r\n\r\n{colour: red}")
		require.NoError(t, err)
		resp, err = http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err)
		body, _ = io.ReadAll(resp.Body)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode)
		require.Contains(t, string(body), "colour")
		c.Close()

		require.NoError(t, hs.Close())
		require.ErrorIs(t, <-served, http.ErrServerClosed)
	})
}

// Each phase the API accepts gives both directions the same impairments,
// each an instance of its own. What the API does with any body at all is
// fuzzed where the body is parsed: scenarios' FuzzParsePhase.
func TestProxyPhaseBothDirections(t *testing.T) {
	for _, s := range proxyPhaseSeeds {
		up, down, err := phaseImpairments([]byte(s))
		if err != nil {
			require.NotContains(t, err.Error(), "network.both", "%q: the error speaks of the wrapping scenario", s)
			continue
		}
		require.Len(t, down, len(up), "%q", s)
		for i := range up {
			require.Equal(t, up[i].Kind(), down[i].Kind(), "%q", s)
		}
	}
}

// proxyPhaseSeeds are bodies a client might PUT: valid phases, a bare
// number, nothing, a list.
var proxyPhaseSeeds = []string{"{delay: 50ms, loss: 2%}", "{rate: 5Mbit/s, queue: {packets: 100}}", "{delay: 5}", "", "- a\n- b", "{jitter: {spread: 10ms, correlation: 50%}}"}
