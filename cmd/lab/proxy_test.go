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
	echo, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer echo.Close()
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
	proxyAddr, api := a[0], "http://"+a[1]

	client, err := net.Dial("udp", proxyAddr)
	require.NoError(t, err)
	defer client.Close()
	_, err = client.Write([]byte("hello"))
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

	put := func(path, body string) (int, string) {
		req, err := http.NewRequest(http.MethodPut, api+path, strings.NewReader(body))
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		msg, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(msg)
	}
	code, msg := put("/down", "{delay: 50ms, loss: 2%}")
	require.Equal(t, http.StatusOK, code, msg)
	require.Equal(t, "{delay: 50ms, loss: 2%}", status().Now["down"])
	require.Equal(t, "scenario lan-animation", status().Now["up"], "only the direction asked for")

	code, msg = put("/both", "{delay: 5}")
	require.Equal(t, http.StatusBadRequest, code)
	require.Equal(t, "line 1: delay: 5 is missing a unit: expected a duration like 25ms, 1.5s or 500us\n", msg)
	code, _ = put("/sideways", "{delay: 5ms}")
	require.Equal(t, http.StatusNotFound, code)

	cancel()
	require.NoError(t, <-done)
	require.Contains(t, out.String(), "proxy: done; up 1 packets in, 1 out; down 1 in, 1 out")
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
