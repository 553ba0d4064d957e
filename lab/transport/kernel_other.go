//go:build !linux

package transport

import (
	"context"
	"fmt"

	"github.com/nuvirahub/latencylab/lab/laberr"
)

// Open implements Transport: it refuses, for network namespaces and TUN
// devices are Linux's.
func (Kernel) Open(context.Context, Network) (*Conn, error) {
	return nil, KernelAvailable()
}

// KernelAvailable says why the kernel mode cannot run here: it needs
// Linux.
func KernelAvailable() error {
	return fmt.Errorf("%w: kernel mode needs Linux (network namespaces and TUN devices)", laberr.ErrUnsupported)
}
