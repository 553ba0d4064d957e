//go:build !linux

package vnc

import (
	"context"
	"errors"

	"github.com/nuvirahub/latencylab/lab/result"
)

// errNotLinux: the kernel mode is Linux's.
var errNotLinux = errors.New("vnc: lab vnc needs Linux (network namespaces and TUN devices)")

// Available says why Run cannot run here: only on Linux.
func Available() error { return errNotLinux }

// Run needs Linux.
func Run(context.Context, Config) (*result.Run, error) { return nil, errNotLinux }
