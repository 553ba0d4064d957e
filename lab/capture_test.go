package lab

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket/pcapgo"
	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/lab/traffic"
	"github.com/nuvirahub/latencylab/lab/transport"
	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/netem/pcap"
)

// captured runs a short session with loss on the downlink and every
// Capture option on, and returns the files' paths.
func captured(t *testing.T) (res *Result, pcapPath, keysPath, qlogDir string) {
	t.Helper()
	dir := t.TempDir()
	pcapPath, keysPath, qlogDir = filepath.Join(dir, "session.pcapng"), filepath.Join(dir, "keys.log"), filepath.Join(dir, "qlog")
	pf, err := os.Create(pcapPath)
	require.NoError(t, err)
	kf, err := os.Create(keysPath)
	require.NoError(t, err)
	s := Session{
		Seed: 1, Duration: 300 * time.Millisecond,
		Uplink: lan(), Downlink: append(lan(), &netem.Loss{Probability: 0.05}),
		Capture: Capture{Pcap: pf, KeyLog: kf, QlogDir: qlogDir},
	}
	res = run(t, s)
	require.NoError(t, pf.Close())
	require.NoError(t, kf.Close())
	return res, pcapPath, keysPath, qlogDir
}

// tsharkPath finds tshark, skipping the test without it unless CI demands
// it (LAB_REQUIRE_TSHARK=1).
func tsharkPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("tshark")
	if err != nil {
		if os.Getenv("LAB_REQUIRE_TSHARK") == "1" {
			t.Fatalf("tshark not found in PATH but LAB_REQUIRE_TSHARK=1: install Debian's tshark package: %v", err)
		}
		t.Skip("tshark not found in PATH: install Debian's tshark package (apt-get install tshark) to run this test; LAB_REQUIRE_TSHARK=1 makes its absence a failure")
	}
	return p
}

// tsharkFields runs tshark over a capture with the key log and returns one
// row of the fields per frame that passes filter.
func tsharkFields(t *testing.T, tshark, file, keys, filter string, fields ...string) [][]string {
	t.Helper()
	args := []string{"-r", file, "-o", "tls.keylog_file:" + keys, "-T", "fields", "-E", "separator=/t"}
	if filter != "" {
		args = append(args, "-Y", filter)
	}
	for _, f := range fields {
		args = append(args, "-e", f)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(tshark, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "tshark %v: %s", args, stderr.String())
	var rows [][]string
	for line := range strings.SplitSeq(strings.TrimRight(string(out), "\n"), "\n") {
		if line != "" {
			rows = append(rows, strings.Split(line, "\t"))
		}
	}
	return rows
}

// finalStats reads the links' final counters that the capture ends with,
// as pcapng interface statistics: packets per interface, and drops by
// reason from the -in interface's comment.
func finalStats(t *testing.T, file string) (packets map[string]uint64, drops map[string]map[string]uint64) {
	t.Helper()
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	r, err := pcapgo.NewNgReader(f, pcapgo.DefaultNgReaderOptions)
	require.NoError(t, err)
	for {
		if _, _, err := r.ReadPacketData(); err != nil {
			require.ErrorIs(t, err, io.EOF)
			break
		}
	}
	packets, drops = map[string]uint64{}, map[string]map[string]uint64{}
	for i := range r.NInterfaces() {
		intf, err := r.Interface(i)
		require.NoError(t, err)
		packets[intf.Name] = intf.Statistics.PacketsReceived
		if link, ok := strings.CutSuffix(intf.Name, "-in"); ok {
			drops[link] = map[string]uint64{}
			list, _ := strings.CutPrefix(intf.Statistics.Comment, "drops: ")
			for kv := range strings.FieldsSeq(list) {
				k, v, ok := strings.Cut(kv, "=")
				if !ok {
					continue // "no drops"
				}
				n, err := strconv.ParseUint(v, 10, 64)
				require.NoError(t, err)
				drops[link][k] = n
			}
		}
	}
	return packets, drops
}

// A session's capture, decrypted by tshark with the session's key log,
// shows the QUIC handshake of both ends and, on each side of each link,
// exactly the packets the link counted: every offered packet on -in, every
// delivered one on -out, and every drop marked with its reason.
func TestCaptureTshark(t *testing.T) {
	tshark := tsharkPath(t)
	res, file, keys, _ := captured(t)
	require.NotZero(t, res.Downlink.Dropped[netem.DropLoss].Packets, "the test needs drops")

	rows := tsharkFields(t, tshark, file, keys, "", "frame.interface_name", "frame.comment", "tls.handshake.type")
	perIface := map[string]uint64{}
	dropped := map[string]map[string]uint64{"uplink": {}, "downlink": {}}
	deliveredFate := map[string]uint64{}
	handshake := map[string][]string{} // TLS handshake message types by interface
	for _, row := range rows {
		row = append(row, "", "", "")
		iface, comment, hs := row[0], row[1], row[2]
		perIface[iface]++
		if link, ok := strings.CutSuffix(iface, "-in"); ok {
			switch {
			case strings.HasPrefix(comment, pcap.DroppedPrefix):
				dropped[link][strings.TrimPrefix(comment, pcap.DroppedPrefix)]++
			case strings.HasPrefix(comment, pcap.DeliveredPrefix):
				deliveredFate[link]++
			default:
				t.Errorf("packet on %s without its fate: comment %q", iface, comment)
			}
		}
		if hs != "" {
			handshake[iface] = append(handshake[iface], strings.Split(hs, ",")...)
		}
	}
	// The ClientHello is readable without keys (Initial keys derive from
	// the connection ID); the Finished messages of both ends are in
	// Handshake packets, which only the key log decrypts.
	const clientHello, serverHello, finished = "1", "2", "20"
	require.Contains(t, handshake["uplink-in"], clientHello)
	require.Contains(t, handshake["uplink-in"], finished, "client Finished decrypted")
	require.Contains(t, handshake["downlink-in"], serverHello)
	require.Contains(t, handshake["downlink-in"], finished, "server Finished decrypted")

	// The capture ends with the links' counters after Close: they include
	// the last packets (the CONNECTION_CLOSE) sent after the Result's
	// snapshot, and those still in flight at Close (DropClosed).
	stats, drops := finalStats(t, file)
	for _, link := range []string{"uplink", "downlink"} {
		require.Equal(t, stats[link+"-in"], perIface[link+"-in"], "%s: offered packets", link)
		require.Equal(t, stats[link+"-out"], perIface[link+"-out"], "%s: delivered packets", link)
		closed := drops[link][string(netem.DropClosed)]
		delete(drops[link], string(netem.DropClosed))
		require.Equal(t, drops[link], dropped[link], "%s: drops by reason", link)
		require.Equal(t, deliveredFate[link], perIface[link+"-out"]+closed, "%s: every packet due leaves, but those lost at Close", link)
	}
	require.GreaterOrEqual(t, perIface["downlink-in"], res.Downlink.Offered.Packets)
	require.LessOrEqual(t, perIface["downlink-in"], res.Downlink.Offered.Packets+2, "only the closing packets come after the result")
	require.Equal(t, res.Downlink.Dropped[netem.DropLoss].Packets, dropped["downlink"][string(netem.DropLoss)])
	t.Logf("packets %v, drops %v", perIface, dropped)

	// Every packet shows twice in the capture (entering and leaving), so
	// Wireshark, which expects packet numbers to rise across a key update,
	// decrypts 1-RTT packets only until quic-go's first one. What one host
	// would have captured, one link's -in and the other's -out, decrypts
	// whole: the agent's side here.
	side := filepath.Join(filepath.Dir(file), "agent-side.pcapng")
	out, err := exec.Command(tshark, "-r", file, "-Y", `frame.interface_name == "downlink-in" || frame.interface_name == "uplink-out"`, "-w", side).CombinedOutput()
	require.NoError(t, err, "%s", out)
	short := tsharkFields(t, tshark, side, keys, "quic.short", "quic.decryption_failed", "quic.frame_type")
	require.NotEmpty(t, short)
	for _, row := range short {
		row = append(row, "", "")
		require.Empty(t, row[0], "a 1-RTT packet failed to decrypt")
		require.NotEmpty(t, row[1], "a 1-RTT packet's frames")
	}
	require.Greater(t, len(short), 100, "past quic-go's first key update")
}

// Both endpoints write a qlog, JSON-SEQ as qvis reads it, with the
// handshake in it.
func TestCaptureQlog(t *testing.T) {
	_, _, _, dir := captured(t)
	for _, name := range []string{"agent.sqlog", "viewer.sqlog"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		require.Equal(t, byte(0x1e), data[0], "%s: JSON-SEQ records begin with RS", name)
		states := map[string]bool{}
		records := bytes.Split(data[1:], []byte{0x1e})
		var header map[string]any
		require.NoError(t, json.Unmarshal(records[0], &header), name)
		require.Equal(t, "JSON-SEQ", header["qlog_format"], name)
		for _, rec := range records[1:] {
			// data.new is a state here, a number elsewhere (the path
			// MTU's recovery:mtu_updated).
			var ev struct {
				Name string
				Data struct{ New any }
			}
			require.NoError(t, json.Unmarshal(rec, &ev), "%s: %s", name, rec)
			if state, ok := ev.Data.New.(string); ok && ev.Name == "quic:connection_state_updated" {
				states[state] = true
			}
		}
		for _, s := range []string{"handshake_started", "handshake_complete", "handshake_confirmed", "closed"} {
			require.True(t, states[s], "%s: connection state %s", name, s)
		}
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 2, "one file per endpoint")
}

// A session with traffic names each packet's flow in a comment of its own
// beside its fate, by the flow's ports, and lists the flows in the
// capture's comment; the flows' QUIC is in the key log too. In real time
// the ports are the kernel's choice, and the flows are named by the
// sockets the lab made for them.
func TestCaptureNamesFlows(t *testing.T) {
	tshark := tsharkPath(t)
	for _, realTime := range []bool{false, true} {
		t.Run(map[bool]string{false: "virtual", true: "real-time"}[realTime], func(t *testing.T) {
			dir := t.TempDir()
			file, keys := filepath.Join(dir, "traffic.pcapng"), filepath.Join(dir, "keys.log")
			pf, err := os.Create(file)
			require.NoError(t, err)
			kf, err := os.Create(keys)
			require.NoError(t, err)
			s := Session{
				Seed: 1, Duration: time.Second, Uplink: lan(),
				// 10 Mbit/s keeps the download's capture small.
				Downlink: []netem.Impairment{&netem.Rate{Rate: 10_000_000}, &netem.Delay{Delay: 5 * time.Millisecond}},
				Traffic: []traffic.Flow{
					{Name: "voice", Kind: traffic.KindCBR, Rate: 64_000, Size: 160},
					{Name: "download", Kind: traffic.KindQUICBulk, Start: 200 * time.Millisecond, Stop: 600 * time.Millisecond},
				},
				Capture: Capture{Pcap: pf, KeyLog: kf},
			}
			var res *Result
			if realTime {
				s.Transport = transport.RealTime{}
				res, err = RunSession(s)
				require.NoError(t, err)
			} else {
				res = run(t, s)
			}
			require.NoError(t, pf.Close())
			require.NoError(t, kf.Close())
			require.Positive(t, res.Traffic[0].Stats.Delivered)
			require.Positive(t, res.Traffic[1].Stats.Delivered)

			rows := tsharkFields(t, tshark, file, keys, "", "frame.interface_name", "frame.comment", "udp.srcport", "udp.dstport", "quic.short", "udp.length")
			perFlow := map[string]int{}
			for _, row := range rows {
				row = append(row, "", "", "", "", "", "")
				iface, comments, src, dst := row[0], strings.Split(row[1], ","), row[2], row[3]
				var got string
				for _, c := range comments {
					if strings.HasPrefix(c, "flow ") {
						got = c
					}
				}
				if !realTime {
					want := "flow main"
					for _, port := range []string{src, dst} {
						switch port {
						case "6000":
							want = "flow voice"
						case "6001":
							want = "flow download"
						}
					}
					require.Equal(t, want, got, "%s %s -> %s: %q", iface, src, dst, row[1])
				} else if got == "flow voice" {
					// In real time the ports say nothing; the voice's
					// datagrams, all of one size, say whose they are.
					require.Equal(t, "168", row[5], "%s %s -> %s: a voice datagram", iface, src, dst)
				}
				if strings.HasSuffix(iface, "-in") {
					require.Len(t, comments, 2, "its fate, then its flow: %q", row[1])
				}
				perFlow[got]++
			}
			require.Positive(t, perFlow["flow main"])
			require.Positive(t, perFlow["flow voice"])
			require.Positive(t, perFlow["flow download"])
			require.Zero(t, perFlow[""], "every packet named")

			f, err := os.Open(file)
			require.NoError(t, err)
			defer f.Close()
			r, err := pcapgo.NewNgReader(f, pcapgo.DefaultNgReaderOptions)
			require.NoError(t, err)
			want := "flows: main (the session: agent 10.0.0.2:4433, viewer 10.0.0.1:40000); voice (cbr, down, udp port 6000 at both hosts); download (quic-bulk, down, udp port 6001 at both hosts)"
			if realTime {
				want = "flows: main (the session); voice (cbr, down, sockets of its own on loopback); download (quic-bulk, down, sockets of its own on loopback)"
			}
			require.Equal(t, want, r.SectionInfo().Comment)
		})
	}
}
