//go:build !linux

package netem

func newLinkTimer(bool) linkTimer { return newRuntimeTimer() }
