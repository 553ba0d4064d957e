//go:build unix

package filelock

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// While one holds the lock, another cannot take it; once it is released,
// another can.
func TestLockTakesTurns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	unlock := Lock(path)
	other, err := os.Open(path)
	require.NoError(t, err)
	defer other.Close()
	require.ErrorIs(t, syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB), syscall.EWOULDBLOCK, "a second took the lock while the first held it")
	unlock()
	require.NoError(t, syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB), "the lock was not released")
	require.NoError(t, syscall.Flock(int(other.Fd()), syscall.LOCK_UN))
}
