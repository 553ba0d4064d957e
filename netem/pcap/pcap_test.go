package pcap_test

import (
	"bytes"
	"io"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/netem/pcap"
)

// A tapped link's capture holds every offered packet on -in and every
// delivered one on -out, as UDP over IPv4 with the packets' addresses, and
// ends with the link's counters.
func TestTapCapture(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		w := pcap.NewWriter(&buf)
		tap, err := w.Tap("down")
		require.NoError(t, err)
		l, err := netem.NewLink(netem.LinkConfig{Name: "down", Seed: 1, Tap: tap, Impairments: []netem.Impairment{
			&netem.Delay{Delay: 10 * time.Millisecond}, &netem.Loss{Probability: 0.3}, &netem.Duplicate{Probability: 0.2},
		}}, func(*netem.Packet) {})
		require.NoError(t, err)
		from := &net.UDPAddr{IP: net.IPv4(10, 0, 0, 2), Port: 4433}
		to := &net.UDPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 40000}
		for i := range 100 {
			require.NoError(t, l.Send(&netem.Packet{Data: []byte{byte(i), 1, 2}, From: from, To: to}))
			time.Sleep(time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond)
		require.NoError(t, l.Close())
		st := l.Stats()
		require.NoError(t, w.WriteStats("down", st))
		require.NoError(t, w.Close())

		r, err := pcapgo.NewNgReader(&buf, pcapgo.DefaultNgReaderOptions)
		require.NoError(t, err)
		count := map[int]uint64{}
		for {
			data, ci, err := r.ReadPacketData()
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			count[ci.InterfaceIndex]++
			p := gopacket.NewPacket(data, layers.LayerTypeIPv4, gopacket.Default)
			udp, ok := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
			require.True(t, ok)
			require.EqualValues(t, 4433, udp.SrcPort)
			require.Len(t, udp.Payload, 3)
		}
		require.Equal(t, st.Offered.Packets, count[0])
		require.Equal(t, st.Delivered.Packets, count[1])
		require.NotZero(t, st.Duplicated)
		in, err := r.Interface(0)
		require.NoError(t, err)
		require.Equal(t, "down-in", in.Name)
		require.Equal(t, st.Offered.Packets, in.Statistics.PacketsReceived)
		require.Equal(t, st.DroppedTotal().Packets, in.Statistics.PacketsDropped)
		require.Contains(t, in.Statistics.Comment, "loss=")
	})
}

// A link that carries whole IP packets (the kernel mode's) is captured byte
// for byte by TapIP: a TCP segment stays a TCP segment, with no UDP header
// wrapped around it.
func TestTapIPCapturesPacketsAsTheyAre(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolTCP,
			SrcIP: net.IPv4(10, 77, 0, 1), DstIP: net.IPv4(10, 77, 0, 2)}
		tcp := &layers.TCP{SrcPort: 40000, DstPort: 80, SYN: true, Seq: 7, Window: 64240}
		require.NoError(t, tcp.SetNetworkLayerForChecksum(ip))
		buf := gopacket.NewSerializeBuffer()
		require.NoError(t, gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ip, tcp))
		packet := buf.Bytes()

		var out bytes.Buffer
		w := pcap.NewWriter(&out)
		tap, err := w.TapIP("up")
		require.NoError(t, err)
		l, err := netem.NewLink(netem.LinkConfig{Name: "up", Tap: tap,
			Impairments: []netem.Impairment{&netem.Delay{Delay: 25 * time.Millisecond}}}, func(*netem.Packet) {})
		require.NoError(t, err)
		require.NoError(t, l.Send(&netem.Packet{Data: bytes.Clone(packet)}))
		time.Sleep(30 * time.Millisecond)
		require.NoError(t, l.Close())
		require.NoError(t, w.Close())

		r, err := pcapgo.NewNgReader(&out, pcapgo.DefaultNgReaderOptions)
		require.NoError(t, err)
		var seen []int
		for {
			data, ci, err := r.ReadPacketData()
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			require.Equal(t, packet, data, "interface %d", ci.InterfaceIndex)
			seen = append(seen, ci.InterfaceIndex)
		}
		require.Equal(t, []int{0, 1}, seen, "offered on up-in, delivered on up-out")
	})
}

// A capture that names flows gives each packet a second comment, "flow
// NAME", beside its fate (the option repeats in the block), and carries
// the description as the section's comment; a packet no flow claims keeps
// its fate alone.
func TestNameFlows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		w := pcap.NewWriter(&buf)
		w.Describe("flows: main; download")
		w.NameFlows(func(p *netem.Packet) string {
			if p.From.(*net.UDPAddr).Port == 6000 {
				return "download"
			}
			return ""
		})
		tap, err := w.Tap("down")
		require.NoError(t, err)
		l, err := netem.NewLink(netem.LinkConfig{Name: "down", Tap: tap}, func(*netem.Packet) {})
		require.NoError(t, err)
		to := &net.UDPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 6000}
		require.NoError(t, l.Send(&netem.Packet{Data: []byte("d"), From: &net.UDPAddr{IP: net.IPv4(10, 0, 0, 2), Port: 6000}, To: to}))
		require.NoError(t, l.Send(&netem.Packet{Data: []byte("x"), From: &net.UDPAddr{IP: net.IPv4(10, 0, 0, 2), Port: 7000}, To: to}))
		time.Sleep(time.Millisecond)
		require.NoError(t, l.Close())
		require.NoError(t, w.Close())

		out := buf.Bytes()
		require.Equal(t, 2, bytes.Count(out, []byte(pcap.FlowPrefix+"download")), "on -in and on -out")
		require.Equal(t, 2, bytes.Count(out, []byte(pcap.DeliveredPrefix)), "both packets' fates")
		r, err := pcapgo.NewNgReader(bytes.NewReader(out), pcapgo.DefaultNgReaderOptions)
		require.NoError(t, err)
		require.Equal(t, "flows: main; download", r.SectionInfo().Comment)
		n := 0
		for {
			_, _, err := r.ReadPacketData()
			if err == io.EOF {
				break
			}
			require.NoError(t, err, "the blocks with two comments read back")
			n++
		}
		require.Equal(t, 4, n)
	})
}
