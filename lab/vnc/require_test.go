package vnc

import (
	"os"
	"testing"
)

// requireVNC skips the test unless the servers are installed and, with
// kernelMode, the kernel mode can run (root); LAB_REQUIRE_VNC=1 and
// LAB_REQUIRE_KERNEL=1 (CI) make either absence a failure instead.
func requireVNC(t *testing.T, kernelMode bool, servers ...string) {
	t.Helper()
	if kernelMode {
		if err := Available(); err != nil {
			if os.Getenv("LAB_REQUIRE_KERNEL") == "1" {
				t.Fatalf("LAB_REQUIRE_KERNEL=1 but %v", err)
			}
			t.Skipf("skipping: %v (set LAB_REQUIRE_KERNEL=1 to make this a failure)", err)
		}
	}
	for _, s := range servers {
		if err := Check(s); err != nil {
			if os.Getenv("LAB_REQUIRE_VNC") == "1" {
				t.Fatalf("LAB_REQUIRE_VNC=1 but %v", err)
			}
			t.Skipf("skipping: %v (set LAB_REQUIRE_VNC=1 to make this a failure)", err)
		}
	}
}

// requireViewer skips the test unless the viewer's programs are installed;
// LAB_REQUIRE_VNC=1 (CI) makes their absence a failure instead.
func requireViewer(t *testing.T, viewer string) {
	t.Helper()
	if err := CheckViewer(viewer); err != nil {
		if os.Getenv("LAB_REQUIRE_VNC") == "1" {
			t.Fatalf("LAB_REQUIRE_VNC=1 but %v", err)
		}
		t.Skipf("skipping: %v (set LAB_REQUIRE_VNC=1 to make this a failure)", err)
	}
}
