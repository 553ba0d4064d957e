//go:build !unix

package testbin

// lock is a no-op where there is no flock: builds of one binary may then
// run side by side, which costs time, never a result.
func lock(string) (unlock func()) { return func() {} }
