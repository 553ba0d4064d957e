//go:build !linux

package ccgrid

import (
	"context"
	"errors"
	"io"
)

// errNotLinux: kernel mode moves packets between Linux network namespaces.
var errNotLinux = errors.New("ccgrid: the grid runs the Linux kernel's TCP controllers in network namespaces: Linux only")

// Check reports that the grid cannot run off Linux.
func Check(Grid) error { return errNotLinux }

// Run cannot run off Linux; reports written on Linux still render here.
func Run(context.Context, Grid, string, io.Writer) (*Report, error) { return nil, errNotLinux }
