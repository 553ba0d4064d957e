//go:build !linux

package main

import (
	"fmt"
	"os"
)

// shellMain refuses: the shell's namespace and TUN devices are Linux's.
func shellMain([]string) int {
	fmt.Fprintln(os.Stderr, "lab: shell: needs Linux (network namespaces and TUN devices)")
	return shellFailed
}
