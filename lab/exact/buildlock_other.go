//go:build !unix

package exact

// lockBuild is a no-op where there is no flock: guest builds may then run
// side by side, which costs time, never a result.
func lockBuild() (unlock func()) { return func() {} }
