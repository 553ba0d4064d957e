package transport

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/lab/laberr"
	"github.com/nuvirahub/latencylab/lab/traffic"
)

// Each transport refuses, before anything is made, what it cannot carry,
// and lets the rest through.
func TestCheck(t *testing.T) {
	bulk := traffic.Flow{Name: "d", Kind: traffic.KindTCPBulk}
	bbr := traffic.Flow{Name: "d", Kind: traffic.KindTCPBulk, Congestion: "bbr"}
	cbr := traffic.Flow{Name: "v", Kind: traffic.KindCBR, Rate: 64_000}
	delayed := traffic.Flow{Name: "d", Kind: traffic.KindTCPBulk, Delay: time.Millisecond}
	for name, c := range map[string]struct {
		tr    Transport
		flows []traffic.Flow
		want  string // "" for none
	}{
		"memory, every model":        {Memory{}, []traffic.Flow{bulk, cbr, delayed}, ""},
		"memory, bbr":                {Memory{}, []traffic.Flow{bbr}, "congestion bbr needs the kernel's TCP"},
		"real time, bbr":             {RealTime{}, []traffic.Flow{bbr}, "congestion bbr needs the kernel's TCP"},
		"kernel, bbr":                {Kernel{}, []traffic.Flow{bbr}, ""},
		"kernel, cbr":                {Kernel{}, []traffic.Flow{cbr}, "a cbr flow in the kernel mode"},
		"kernel, an extra delay":     {Kernel{}, []traffic.Flow{delayed}, "an extra delay in the kernel mode"},
		"kernel, controller on quic": {Kernel{Controller: "bbr"}, nil, "congestion controller \"bbr\" with QUIC"},
		"kernel, unknown transport":  {Kernel{Transport: "tcp"}, nil, "kernel mode transport \"tcp\""},
		"topology":                   {Topology{Connect: "auto"}, nil, ""},
		"topology, traffic":          {Topology{}, []traffic.Flow{bulk}, "traffic in a session with a path"},
		"topology, strategy":         {Topology{Connect: "carrier-pigeon"}, nil, "path strategy \"carrier-pigeon\""},
	} {
		t.Run(name, func(t *testing.T) {
			err := c.tr.Check(c.flows)
			if c.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, laberr.ErrUnsupported)
			require.ErrorContains(t, err, c.want)
		})
	}
}

// Only the real-time transport's sockets take their ports from the
// kernel; a capture names the others' flows by their fixed ports.
func TestNamedPorts(t *testing.T) {
	for _, tr := range []Transport{Memory{}, Kernel{}, Topology{}} {
		_, named := tr.(NamedPorts)
		require.False(t, named, "%T", tr)
	}
	var rt Transport = RealTime{}
	_, named := rt.(NamedPorts)
	require.True(t, named)
}

// The topology and the kernel mode cannot carry an ECN-capable session:
// they refuse it before they make anything, saying why.
func TestECNOnlyInMemory(t *testing.T) {
	for _, c := range []struct {
		tr   Transport
		want string
	}{
		{Topology{Connect: "auto"}, "NAT routers and relays forward datagrams without their ECN bits"},
		{Kernel{}, "do not read or set the ECN bits"},
	} {
		if _, kernel := c.tr.(Kernel); kernel && runtime.GOOS != "linux" {
			continue // the kernel mode is Linux's
		}
		_, err := c.tr.Open(t.Context(), Network{ECN: true})
		require.ErrorIs(t, err, ErrNoECN)
		require.ErrorIs(t, err, laberr.ErrUnsupported)
		require.ErrorContains(t, err, c.want)
	}
}
