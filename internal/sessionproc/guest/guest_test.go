package guest

import (
	"os"
	"testing"

	"github.com/nuvirahub/latencylab/internal/sessionproc"
)

// TestGuest serves sessions from standard input when GuestEnv is set (in
// an instance internal/exact started); otherwise there is nothing to do,
// and package internal/exact's tests run it for real.
func TestGuest(t *testing.T) {
	if os.Getenv(GuestEnv) == "" {
		t.Skip("runs inside a WebAssembly instance of internal/exact, which tests it")
	}
	if err := sessionproc.Serve(t, os.Stdin, os.Stdout, ResultPrefix); err != nil {
		t.Fatal(err)
	}
}
