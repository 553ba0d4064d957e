// Package openh264test is what tests that need OpenH264 share: Require,
// which skips such a test where the library is absent and fails it where
// LAB_REQUIRE_OPENH264=1 says it must be there (CI).
package openh264test

import (
	"os"
	"testing"

	"github.com/nuvirahub/latencylab/agent/encoder/openh264"
)

// Require skips t, saying what is missing, when OpenH264 cannot run here;
// with LAB_REQUIRE_OPENH264=1 it fails t instead.
func Require(t testing.TB) {
	t.Helper()
	err := openh264.Available()
	if err == nil {
		return
	}
	if os.Getenv("LAB_REQUIRE_OPENH264") == "1" {
		t.Fatalf("LAB_REQUIRE_OPENH264=1 but %v", err)
	}
	t.Skipf("skipping: %v (set LAB_REQUIRE_OPENH264=1 to make this a failure)", err)
}
