package netem

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

func tcpAddr(s string) net.Addr { a, _ := net.ResolveTCPAddr("tcp", s); return a }

func TestStreamDelayAndRateAreExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 1 Mbit/s: one 1448-byte segment takes 11.584 ms to serialise.
		a, b := StreamPipe(StreamConfig{Delay: 20 * time.Millisecond, Rate: 1_000_000}, StreamConfig{},
			tcpAddr("10.0.0.1:1"), tcpAddr("10.0.0.2:2"))
		start := time.Now()
		payload := bytes.Repeat([]byte("x"), 2*streamMSS)
		n, err := a.Write(payload)
		require.NoError(t, err)
		require.Equal(t, len(payload), n)
		require.Zero(t, time.Since(start), "the window holds it: Write does not block")

		buf := make([]byte, 10*streamMSS)
		n, err = b.Read(buf)
		require.NoError(t, err)
		require.Equal(t, streamMSS, n)
		require.Equal(t, 11584*time.Microsecond+20*time.Millisecond, time.Since(start))
		n, err = b.Read(buf)
		require.NoError(t, err)
		require.Equal(t, streamMSS, n)
		require.Equal(t, 2*11584*time.Microsecond+20*time.Millisecond, time.Since(start))
	})
}

func TestStreamWindowBlocksWriterUntilRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := StreamPipe(StreamConfig{Window: 4000}, StreamConfig{}, nil, nil)
		done := make(chan int)
		go func() {
			n, _ := a.Write(make([]byte, 10000))
			done <- n
		}()
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("Write returned with a full window")
		default:
		}
		got, err := io.ReadAll(io.LimitReader(b, 10000))
		require.NoError(t, err)
		require.Len(t, got, 10000)
		require.Equal(t, 10000, <-done)
	})
}

func TestStreamCloseGivesEOFAfterData(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := StreamPipe(StreamConfig{Delay: 5 * time.Millisecond}, StreamConfig{}, nil, nil)
		_, err := a.Write([]byte("bye"))
		require.NoError(t, err)
		require.NoError(t, a.Close())
		got, err := io.ReadAll(b)
		require.NoError(t, err)
		require.Equal(t, "bye", string(got))
		_, err = a.Write([]byte("more"))
		require.ErrorIs(t, err, net.ErrClosed)
		_, err = b.Write([]byte("to a closed reader"))
		require.ErrorIs(t, err, io.ErrClosedPipe)
	})
}

func TestStreamDeadlinesAndCloseWakeBlockedCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := StreamPipe(StreamConfig{}, StreamConfig{}, nil, nil)
		start := time.Now()
		require.NoError(t, b.SetReadDeadline(start.Add(50*time.Millisecond)))
		_, err := b.Read(make([]byte, 1))
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
		require.Equal(t, 50*time.Millisecond, time.Since(start))

		require.NoError(t, b.SetReadDeadline(time.Time{}))
		errc := make(chan error)
		go func() { _, err := b.Read(make([]byte, 1)); errc <- err }()
		synctest.Wait()
		require.NoError(t, b.Close())
		require.ErrorIs(t, <-errc, net.ErrClosed)
		_ = a
	})
}

func TestStreamListenerServesHTTP(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewStreamListener(tcpAddr("10.0.0.2:80"),
			StreamConfig{Delay: 10 * time.Millisecond}, StreamConfig{Delay: 10 * time.Millisecond})
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, "hello")
		})}
		go srv.Serve(l)
		client := &http.Client{Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return l.Dial(ctx, tcpAddr("10.0.0.1:40000"))
			},
		}}
		start := time.Now()
		resp, err := client.Get("http://10.0.0.2/")
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, "hello", string(body))
		require.Equal(t, 40*time.Millisecond, time.Since(start), "handshake RTT + request RTT")
		client.CloseIdleConnections()
		require.NoError(t, srv.Close())
	})
}
