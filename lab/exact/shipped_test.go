package exact

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/require"
)

// A lab binary's built-in guest must be the one built from its own source
// (the hash it was linked with): another, or none where a hash is named,
// is refused, as is a lab with no guest outside the module's source.
func TestShippedGuestMustBeItsOwn(t *testing.T) {
	guest := []byte("\x00asm a guest")
	sum := sha256.Sum256(guest)
	own := hex.EncodeToString(sum[:])
	defer func(g []byte, sha string) { shippedGuest, ShippedGuestSHA = g, sha }(shippedGuest, ShippedGuestSHA)

	shippedGuest, ShippedGuestSHA = guest, own
	bin, shipped, err := guestFor(t.Context(), t.TempDir())
	require.NoError(t, err)
	require.True(t, shipped)
	require.Equal(t, guest, bin, "the built-in guest, whatever the root")

	shippedGuest = []byte("\x00asm another guest")
	_, _, err = guestFor(t.Context(), t.TempDir())
	require.ErrorIs(t, err, ErrGuestMismatch)
	require.ErrorContains(t, err, "built from its source: sha256 "+own[:16])

	shippedGuest = nil
	_, _, err = guestFor(t.Context(), t.TempDir())
	require.ErrorIs(t, err, ErrGuestMismatch, "a hash named, no guest carried")

	ShippedGuestSHA = ""
	dir := t.TempDir()
	_, _, err = guestFor(t.Context(), dir)
	require.ErrorIs(t, err, ErrNoGuest)
	require.ErrorContains(t, err, dir+" is not the latencylab module")
}
