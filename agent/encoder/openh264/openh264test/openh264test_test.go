package openh264test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/encoder/openh264"
)

// The binding as the lab links it (the package's own archive, not the
// build of its tests) is usable on this machine, or the skip says why.
// .ci/run reads that reason to find a build cache filled before
// libopenh264-dev was installed, whose binding has no header.
func TestAvailable(t *testing.T) {
	Require(t)
	require.NotEmpty(t, openh264.Version())
}
