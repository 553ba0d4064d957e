package gcdefault

import (
	"os"
	"runtime/debug"
	"testing"
)

// Set gives the collector Percent when GOGC is not set, and leaves the
// user's setting alone when it is.
func TestSetDefersToGOGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100)) // restores the process's setting
	gogc, had := os.LookupEnv("GOGC")
	t.Cleanup(func() {
		if had {
			os.Setenv("GOGC", gogc)
		} else {
			os.Unsetenv("GOGC")
		}
	})

	os.Unsetenv("GOGC")
	debug.SetGCPercent(100)
	Set()
	if got := debug.SetGCPercent(100); got != Percent {
		t.Errorf("without GOGC, the target after Set is %d, want %d", got, Percent)
	}

	os.Setenv("GOGC", "150")
	debug.SetGCPercent(150) // as the runtime read it at start
	Set()
	if got := debug.SetGCPercent(150); got != 150 {
		t.Errorf("with GOGC=150, the target after Set is %d, want 150 (the user's)", got)
	}
}
