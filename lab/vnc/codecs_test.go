package vnc

import (
	"flag"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/agent/codec/dirty"
	"github.com/nuvirahub/latencylab/agent/codec/frames"
	"github.com/nuvirahub/latencylab/agent/codec/hextile"
	"github.com/nuvirahub/latencylab/agent/codec/zrle"
	"github.com/nuvirahub/latencylab/lab/vnc/rfb"
	"github.com/nuvirahub/latencylab/lab/vnc/xscreen"
)

// fullTable runs every case of the comparison and both servers, for the
// table in docs/codecs.md; without it CI runs the keyframes and 10% of
// points, blocks and a noise block, on x11vnc.
var fullTable = flag.Bool("vnc.table", false, "TestCodecsAgainstServers: every case and both servers, and print the Markdown table")

// codecCase is one content of the codec lab's frame sets: a keyframe
// (prev nil) or a P-frame over a solid 720p screen, as the benchmark has
// them (agent/codec/bench).
type codecCase struct {
	name      string
	prev, cur *codec.Frame
}

func codecCases(full bool) []codecCase {
	const w, h = frames.Width720p, frames.Height720p
	var out []codecCase
	for _, k := range []string{frames.Solid, frames.Gradient, frames.Noise} {
		out = append(out, codecCase{name: "keyframe " + k, cur: frames.Keyframe(k, w, h, 1)})
	}
	pcts := []float64{10}
	if full {
		pcts = []float64{1, 10, 50}
	}
	kinds := []string{frames.Points, frames.Blocks, frames.NoiseBlock}
	if full {
		kinds = []string{frames.Points, frames.Blocks, frames.NoisePts, frames.NoiseBlock}
	}
	for _, k := range kinds {
		for _, p := range pcts {
			prev := frames.Keyframe(frames.Solid, w, h, 1)
			out = append(out, codecCase{name: fmt.Sprintf("%s %g%%", k, p), prev: prev, cur: frames.PFrame(prev, k, p, 2)})
		}
	}
	return out
}

// dial connects a client asking for enc, with a minute for everything,
// and returns it with its connection, closed at the test's end at the
// latest.
func dial(t *testing.T, srv *Server, enc int32) (*rfb.Client, net.Conn) {
	t.Helper()
	conn, err := net.Dial("tcp", srv.Addr.String())
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	require.NoError(t, conn.SetDeadline(time.Now().Add(time.Minute)))
	cl, err := rfb.Handshake(conn, rfb.Config{Password: srv.Password, Encodings: []int32{enc}})
	require.NoError(t, err)
	return cl, conn
}

// catchUp reads cl's updates, asking for the next after each, until its
// framebuffer is f (the display's contents), and returns their bytes.
// full asks for the whole framebuffer first. It leaves no request pending:
// a client that caught up is sent nothing more.
func catchUp(t *testing.T, cl *rfb.Client, f *codec.Frame, full bool, what string) (bytes int64, updates int) {
	t.Helper()
	if full || !slices.Equal(cl.Framebuffer().Pix, f.Pix) {
		require.NoError(t, cl.Request(!full))
	}
	for !slices.Equal(cl.Framebuffer().Pix, f.Pix) || (full && updates == 0) {
		m, err := cl.ReadMessage()
		require.NoError(t, err, "%s: the client's framebuffer never became the display's", what)
		if m.Type != rfb.MsgFramebufferUpdate {
			continue
		}
		bytes += m.Bytes
		updates++
		if !slices.Equal(cl.Framebuffer().Pix, f.Pix) {
			require.NoError(t, cl.Request(true))
		}
	}
	return bytes, updates
}

// serverBytes shows c on the server's display and returns the bytes of the
// FramebufferUpdate messages the server sent for it over a fresh
// connection: for a keyframe the answer to a full request, for a P-frame
// what follows the previous frame's. The watcher, a client that stays
// connected, first catches up with each picture drawn, so that the
// server's own copy of the screen is current (x11vnc polls the screen) and
// a full request is answered with the picture alone. Every client reads
// until its framebuffer is the display's contents, so the lab's decoders
// are checked on every update too.
func serverBytes(t *testing.T, srv *Server, disp *xscreen.Display, watcher *rfb.Client, enc int32, c codecCase) (bytes int64, updates int) {
	t.Helper()
	first := c.cur
	if c.prev != nil {
		first = c.prev
	}
	require.NoError(t, disp.Put(first, []codec.Rect{{W: first.W, H: first.H}}))
	require.NoError(t, disp.Sync())
	catchUp(t, watcher, first, false, c.name+": the watcher")
	cl, conn := dial(t, srv, enc)
	// Closed as soon as it has its bytes: x11vnc measures each new
	// client's link once it has sent it its first screen, spinning (up to
	// 5-15 s, without polling the screen) until the client asks again; a
	// client left connected and silent held the next picture from the
	// watcher that long (10 s of this test's 18). A client that leaves
	// ends the measurement, and none starts for 4 s after.
	defer conn.Close()
	bytes, updates = catchUp(t, cl, first, true, c.name)
	if c.prev == nil {
		return bytes, updates
	}
	require.NoError(t, disp.Put(c.cur, dirty.Merge(dirty.Detect(c.prev, c.cur, nil), nil)))
	require.NoError(t, disp.Sync())
	return catchUp(t, cl, c.cur, false, c.name)
}

// labBytes is what the lab's encoder makes of the same frames, over one
// connection's state (ZRLE's zlib stream), as a FramebufferUpdate message:
// the encoder's bytes and the message's type and padding.
func labBytes(t *testing.T, enc codec.Encoder, c codecCase) int64 {
	t.Helper()
	var rects []codec.Rect
	if c.prev != nil {
		_, err := enc.Encode(nil, nil, c.prev, dirty.Merge(dirty.Detect(nil, c.prev, nil), nil))
		require.NoError(t, err)
		rects = dirty.Merge(dirty.Detect(c.prev, c.cur, nil), nil)
	} else {
		rects = dirty.Merge(dirty.Detect(nil, c.cur, nil), nil)
	}
	b, err := enc.Encode(nil, c.prev, c.cur, rects)
	require.NoError(t, err)
	return int64(len(b)) + 2
}

// The codec lab's encoders against real servers on the same content: the
// bytes x11vnc (and, with -vnc.table, Xvnc) sends for Hextile and ZRLE
// beside the bytes the lab's encoders make, by content kind. The encoders
// choose their subencodings freely, so the sizes differ; what must hold
// is that the lab's decoders rebuild every real update exactly (the
// client reads until its framebuffer is the display's contents) and that
// the lab's encoders are as good as the servers' where both send more than
// a kilobyte: within a server's margin (serverMargin) of its bytes, either
// way.
func TestCodecsAgainstServers(t *testing.T) {
	servers := []string{X11vnc}
	if *fullTable {
		servers = Servers
	}
	cases := codecCases(*fullTable)
	type row struct{ bytes [2][2]int64 } // [server or lab][hextile, zrle]
	table := map[string]map[string]*row{}
	for _, kind := range servers {
		t.Run(kind, func(t *testing.T) {
			requireVNC(t, false, kind)
			srv := loopbackServer(t, kind)
			disp, err := xscreen.Open(srv.Display)
			require.NoError(t, err)
			defer disp.Close()
			watcher, _ := dial(t, srv, rfb.EncodingRaw)
			now, err := disp.Get()
			require.NoError(t, err)
			catchUp(t, watcher, now, true, "the watcher")
			table[kind] = map[string]*row{}
			for _, c := range cases {
				r := &row{}
				for i, enc := range []int32{rfb.EncodingHextile, rfb.EncodingZRLE} {
					var lab codec.Encoder = hextile.NewEncoder()
					if enc == rfb.EncodingZRLE {
						lab = zrle.NewEncoder()
					}
					got, updates := serverBytes(t, srv, disp, watcher, enc, c)
					r.bytes[0][i], r.bytes[1][i] = got, labBytes(t, lab, c)
					t.Logf("%s, %s: %s sent %d bytes in %d updates, the lab's encoder %d", c.name, rfb.EncodingName(enc), kind, got, updates, r.bytes[1][i])
					if got > 1000 && r.bytes[1][i] > 1000 {
						lab := r.bytes[1][i]
						m := serverMargin[kind]
						if updates > 1 {
							// It polled the screen while it was drawn and
							// sent some of the picture twice: only the order
							// of its size is the encoder's (within 4x).
							m = margin{share: 0.75}
						}
						require.LessOrEqual(t, max(got, lab)-min(got, lab), m.allowed(got, lab),
							"%s, %s: %s %d bytes in %d updates vs the lab's %d: more than %s apart", c.name, rfb.EncodingName(enc), kind, got, updates, lab, m)
					}
				}
				table[kind][c.name] = r
			}
		})
	}
	if !*fullTable {
		return
	}
	var b strings.Builder
	b.WriteString("| content (720p) | x11vnc Hextile | Xvnc Hextile | lab Hextile | x11vnc ZRLE | Xvnc ZRLE | lab ZRLE |\n|---|---|---|---|---|---|---|\n")
	for _, c := range cases {
		x, v := table[X11vnc][c.name], table[Xvnc][c.name]
		if x == nil || v == nil {
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", c.name, size(x.bytes[0][0]), size(v.bytes[0][0]), size(x.bytes[1][0]),
			size(x.bytes[0][1]), size(v.bytes[0][1]), size(x.bytes[1][1]))
	}
	t.Logf("\n%s", b.String())
}

// margin is how far apart a server's bytes and the lab's encoder's may be:
// a share of the larger and a fixed part.
type margin struct {
	share float64
	fixed int64
}

func (m margin) allowed(a, b int64) int64 { return int64(m.share*float64(max(a, b))) + m.fixed }

func (m margin) String() string {
	return fmt.Sprintf("%.0f%% of the larger and %d B", 100*m.share, m.fixed)
}

// serverMargin is each server's margin. x11vnc's encoders (libvncserver's)
// choose as the lab's do: docs/codecs.md's table has them within 12% of
// each other on every content of more than a kilobyte, and within 217 B
// (17%) on the smallest, blocks 10% in ZRLE, where the update's headers
// and zlib's flush weigh: 15% and 512 B. Xvnc's (TigerVNC's) choose
// otherwise (its Hextile halves the lab's bytes for blocks 10%, its ZRLE
// doubles them for points 1%, 2.2x at most where docs/codecs.md's table
// has 2.0x): 55% and 512 B.
var serverMargin = map[string]margin{X11vnc: {share: 0.15, fixed: 512}, Xvnc: {share: 0.55, fixed: 512}}

// size writes a byte count as the codec lab's tables do.
func size(n int64) string {
	switch {
	case n >= 1e6:
		return fmt.Sprintf("%.2f MB", float64(n)/1e6)
	case n >= 1e4:
		return fmt.Sprintf("%.0f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}
