package jobs

import (
	"os"
	"testing"

	"github.com/nuvirahub/latencylab/internal/gcdefault"
)

// TestMain gives a worker process (Serving) the collector target for
// sessions in virtual time that the library's tests have too
// (internal/gcdefault). The process that starts the workers, or runs exact
// sessions under wazero, keeps Go's default: its heap is mostly the
// instances' memories, which a higher target lets grow for no CPU saved.
func TestMain(m *testing.M) {
	if Serving() {
		gcdefault.Set()
	}
	os.Exit(m.Run())
}
