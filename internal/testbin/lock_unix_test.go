//go:build unix

package testbin

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// While one build holds a binary's lock, another cannot take it; once it
// is released, another can.
func TestBuildsTakeTurns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	unlock := lock(path)
	other, err := os.Open(path)
	require.NoError(t, err)
	defer other.Close()
	require.ErrorIs(t, syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB), syscall.EWOULDBLOCK, "a second build took the lock while the first held it")
	unlock()
	require.NoError(t, syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB), "the lock was not released")
	require.NoError(t, syscall.Flock(int(other.Fd()), syscall.LOCK_UN))
}
