package vnc

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/codec/frames"

	"github.com/nuvirahub/latencylab/lab/vnc/rfb"
	"github.com/nuvirahub/latencylab/lab/vnc/screendrive"
	"github.com/nuvirahub/latencylab/lab/vnc/xscreen"
)

// The loopback servers the tests share, one of each kind at 720p, stopped
// by TestMain: x11vnc takes seconds to serve its first client, once.
var (
	sharedMu      sync.Mutex
	sharedServers = map[string]*Server{}
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, s := range sharedServers {
		if err := s.Close(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// loopbackServer is the shared server of a kind on the loopback, at 720p.
func loopbackServer(t *testing.T, kind string) *Server {
	t.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if s := sharedServers[kind]; s != nil {
		return s
	}
	srv, err := Start(context.Background(), ServerConfig{Kind: kind, Width: frames.Width720p, Height: frames.Height720p,
		Listen: netip.MustParseAddr("127.0.0.1")})
	require.NoError(t, err)
	sharedServers[kind] = srv
	return srv
}

// lockstep draws every version of a screen in turn and, after each, reads
// updates until the client's framebuffer shows that version's marker and,
// with whole, until it is the display's contents: x11vnc polls the screen
// a few scanlines at a time, so the marker's tile may reach the client
// before another tile that changed with it. check then sees the
// framebuffer, the display and the updates since the last version.
func lockstep(t *testing.T, srv *Server, enc int32, screen string, w, h int, d time.Duration, whole bool,
	check func(v uint64, c *rfb.Client, disp *xscreen.Display, updates []rfb.Message)) {
	t.Helper()
	conn, err := net.Dial("tcp", srv.Addr.String())
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(time.Minute)))
	c, err := rfb.Handshake(conn, rfb.Config{Password: srv.Password, Encodings: []int32{enc, rfb.EncodingCopyRect}})
	require.NoError(t, err)
	disp, err := xscreen.Open(srv.Display)
	require.NoError(t, err)
	defer disp.Close()
	cfg := Config{Screen: screen, Duration: d, Width: w, Height: h, Seed: 1}
	frames, err := cfg.frames()
	require.NoError(t, err)
	require.NoError(t, c.Request(false))
	last := frames.Latest(d)
	for v := uint64(1); v <= last; v++ {
		_, err := screendrive.Draw(disp, frames, v)
		require.NoError(t, err)
		var updates []rfb.Message
		for {
			m, err := c.ReadMessage()
			require.NoError(t, err, "version %d", v)
			if m.Type != rfb.MsgFramebufferUpdate {
				continue
			}
			updates = append(updates, m)
			require.NoError(t, c.Request(true))
			if got, ok := screendrive.Read(c.Framebuffer()); !ok || uint64(got) != v {
				continue
			}
			if !whole {
				break
			}
			want, err := disp.Get()
			require.NoError(t, err)
			if slices.Equal(want.Pix, c.Framebuffer().Pix) {
				break
			}
		}
		check(v, c, disp, updates)
	}
}

// The lab's decoders decode every update a real server sends exactly:
// each version of a mixed screen is drawn, and the updates that follow
// make the client's framebuffer the X display's contents (read back with
// GetImage), pixel for pixel, within the connection's minute. A decoder
// that got one rectangle wrong would leave it wrong: the server sends a
// tile again only when the display changes there.
func TestDecodesRealUpdatesExactly(t *testing.T) {
	for _, kind := range VNCServers {
		t.Run(kind, func(t *testing.T) {
			requireVNC(t, false, kind)
			srv := loopbackServer(t, kind)
			for _, enc := range []int32{rfb.EncodingZRLE, rfb.EncodingHextile} {
				t.Run(rfb.EncodingName(enc), func(t *testing.T) {
					start := time.Now()
					versions, rects := 0, map[string]int{}
					lockstep(t, srv, enc, "mix", frames.Width720p, frames.Height720p, time.Second, true, func(v uint64, c *rfb.Client, disp *xscreen.Display, ms []rfb.Message) {
						want, err := disp.Get()
						require.NoError(t, err)
						got := c.Framebuffer()
						for i := range want.Pix {
							if want.Pix[i] != got.Pix[i] {
								t.Fatalf("version %d: pixel %d,%d decoded %06x, the display has %06x", v, i%want.W, i/want.W, got.Pix[i], want.Pix[i])
							}
						}
						versions++
						for _, m := range ms {
							for _, r := range m.Rects {
								rects[rfb.EncodingName(r.Encoding)]++
							}
						}
					})
					t.Logf("%d versions decoded exactly in %v; rectangles by encoding %v", versions, time.Since(start), rects)
					require.Greater(t, versions, 15)
					require.Positive(t, rects[rfb.EncodingName(enc)], "the server used the encoding asked for")
				})
			}
		})
	}
}

// Two runs with the same seed draw the same frames on a real X display:
// every version of a mixed screen is drawn in turn on an Xvfb display and
// read back (GetImage), and the hashes of what the display held agree
// version by version; another seed draws others.
func TestSameSeedSameFrames(t *testing.T) {
	requireVNC(t, false, X11vnc) // Xvfb comes with it
	s := &Server{}
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	var err error
	s.Display, err = s.startX(ctx, io.Discard, "Xvfb", "", "-screen", "0", "320x180x24", "-nolisten", "tcp")
	require.NoError(t, err)
	disp, err := xscreen.Open(s.Display)
	require.NoError(t, err)
	defer disp.Close()
	run := func(seed uint64) [][32]byte {
		cfg := Config{Screen: "mix", Duration: 2 * time.Second, Width: 320, Height: 180, Seed: seed}
		frames, err := cfg.frames()
		require.NoError(t, err)
		var sums [][32]byte
		err = screendrive.Drive(context.Background(), disp, frames, time.Now(), cfg.Duration, 0, false, func(d screendrive.Drawn) {
			got, err := disp.Get()
			require.NoError(t, err)
			b := make([]byte, 0, 4*len(got.Pix))
			for _, p := range got.Pix {
				b = binary.LittleEndian.AppendUint32(b, p)
			}
			sums = append(sums, sha256.Sum256(b))
		})
		require.NoError(t, err)
		return sums
	}
	a, b, c := run(1), run(1), run(2)
	t.Logf("%d versions drawn and read back per run", len(a))
	require.Greater(t, len(a), 30)
	require.Equal(t, a, b)
	require.NotEqual(t, a[0], c[0])
}
