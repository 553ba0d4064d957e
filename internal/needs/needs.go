// Package needs decides what a test does when something it needs from
// outside the repository is missing (a Debian package, root, the shared
// folder of traces beside the repository): it skips, saying what is
// missing and how to get it, unless the variable that requires it is set to
// 1, as CI sets them, and then it fails. A test never skips silently in CI.
package needs

import (
	"fmt"
	"os"
)

// The variables that turn a skip into a failure.
const (
	// Shared requires the shared folder beside the repository (../shared:
	// the write-ups' findings and the real cellular traces).
	Shared = "LAB_REQUIRE_SHARED"
)

// T is the part of testing.TB that needs uses.
type T interface {
	Helper()
	Skip(args ...any)
	Fatal(args ...any)
}

// Missing skips t with why, or fails it when the variable is set to 1.
func Missing(t T, variable, format string, args ...any) {
	t.Helper()
	why := fmt.Sprintf(format, args...)
	if os.Getenv(variable) == "1" {
		t.Fatal(why + "; " + variable + "=1 requires it")
		return
	}
	t.Skip(why + "; " + variable + "=1 makes this a failure")
}
