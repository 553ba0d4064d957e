package relay

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// Drops reach the operator's log at most once every LogEvery, with the
// counts by reason since the last line: a flood of 25 s of unbound and
// malformed datagrams, 40 a second, gives three lines, not a thousand.
func TestDropsAreLoggedAtMostEveryInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		log := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{
			ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey {
					return slog.Attr{} // the bubble's clock says nothing here
				}
				return a
			}}))
		lab, cleanup := newLab(t, Config{Log: log, LogEvery: 10 * time.Second}, time.Millisecond)
		defer cleanup()
		stranger := lab.net.MustListen("10.0.0.2:5001")
		defer stranger.Close()
		for range 25 * 20 {
			_, err := stranger.WriteTo(quicLike(100, 2), lab.udpAddr)
			require.NoError(t, err)
			_, err = stranger.WriteTo([]byte{}, lab.udpAddr)
			require.NoError(t, err)
			time.Sleep(50 * time.Millisecond)
		}
		synctest.Wait()
		st := lab.relay.Stats()
		require.Equal(t, uint64(500), st.DroppedUnbound)
		require.Equal(t, uint64(500), st.DroppedMalformed)
		require.Equal(t, map[DropReason]uint64{DropMalformed: 500, DropUnbound: 500, DropNoPeer: 0, DropSend: 0, DropRefused: 0}, st.Drops())

		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		require.Len(t, lines, 3, out.String())
		require.Equal(t, `level=WARN msg="relay: dropped datagrams" since_last=start last_source=10.0.0.2:5001 unbound=1`, lines[0])
		// The second line at 10 s counts what came after the first: the
		// empty datagram of the first instant, then 10 s of both kinds.
		require.Equal(t, `level=WARN msg="relay: dropped datagrams" since_last=10s last_source=10.0.0.2:5001 malformed=200 unbound=200`, lines[1])
		require.Contains(t, lines[2], "since_last=10s")
	})
}

// Without a log the relay only counts.
func TestDropsWithoutALog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lab, cleanup := newLab(t, Config{}, time.Millisecond)
		defer cleanup()
		stranger := lab.net.MustListen("10.0.0.2:5001")
		defer stranger.Close()
		_, err := stranger.WriteTo(quicLike(100, 2), lab.udpAddr)
		require.NoError(t, err)
		time.Sleep(10 * time.Millisecond)
		require.Equal(t, uint64(1), lab.relay.Stats().Drops()[DropUnbound])
	})
}
