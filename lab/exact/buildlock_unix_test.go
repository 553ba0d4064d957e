//go:build unix

package exact

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// While one guest build holds the lock, another cannot take it; once it
// is released, another can.
func TestGuestBuildsTakeTurns(t *testing.T) {
	unlock := lockBuild()
	other, err := os.Open(filepath.Join(os.TempDir(), "latencylab-guest-build.lock"))
	require.NoError(t, err)
	defer other.Close()
	require.ErrorIs(t, syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB), syscall.EWOULDBLOCK, "a second build took the lock while the first held it")
	unlock()
	require.NoError(t, syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB), "the lock was not released")
	require.NoError(t, syscall.Flock(int(other.Fd()), syscall.LOCK_UN))
}
