package scenarios

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// up_mtu and down_mtu load as sizes, per direction, write back as they
// were, and refuse what no link can have.
func TestMTUKeysPerDirection(t *testing.T) {
	body := `
name: a
description: d
duration: 10s
network:
  both: {delay: 10ms}
  down_mtu: 1400B
`
	s, err := Parse("lib/a.yaml", []byte(body), nil)
	require.NoError(t, err)
	require.Equal(t, 1400, s.Network.DownMTU)
	require.Zero(t, s.Network.UpMTU, "left out: netem's 1500")

	out, err := yaml.Marshal(s)
	require.NoError(t, err)
	require.Contains(t, string(out), "down_mtu: 1400B")
	again, err := Parse("lib/a.yaml", out, nil)
	require.NoError(t, err)
	require.Equal(t, s.Network, again.Network)

	_, err = Parse("lib/a.yaml", []byte(body+"  up_mtu: 60B\n"), nil)
	require.ErrorContains(t, err, "network.up_mtu: 60B out of range: expected a size from 68B to 65535B")
	_, err = Parse("lib/a.yaml", []byte(body+"  up_mtu: 1400\n"), nil)
	require.ErrorContains(t, err, "network.up_mtu")
}
