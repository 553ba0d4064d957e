//go:build !linux

package lab

import (
	"context"
	"fmt"
	"time"
)

// kernelTransport is the kernel mode, which needs Linux.
type kernelTransport struct{}

// open refuses: network namespaces and TUN devices are Linux's.
func (kernelTransport) open(context.Context, Session, time.Time, *recording) (*opened, error) {
	return nil, fmt.Errorf("%w: kernel mode needs Linux (network namespaces and TUN devices)", ErrUnsupported)
}

// KernelAvailable says why the kernel mode cannot run here: it needs
// Linux.
func KernelAvailable() error {
	return fmt.Errorf("%w: kernel mode needs Linux (network namespaces and TUN devices)", ErrUnsupported)
}
