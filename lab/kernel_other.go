//go:build !linux

package lab

import (
	"context"
	"fmt"
	"time"
)

// openKernel refuses: network namespaces and TUN devices are Linux's.
func openKernel(context.Context, Session, time.Time, *recording) (*opened, *kernelRun, error) {
	return nil, nil, fmt.Errorf("%w: kernel mode needs Linux (network namespaces and TUN devices)", ErrUnsupported)
}
