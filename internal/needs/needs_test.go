package needs

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// recorder stands in for a *testing.T, keeping how the test ended.
type recorder struct{ skipped, failed string }

func (r *recorder) Helper()           {}
func (r *recorder) Skip(args ...any)  { r.skipped = fmt.Sprint(args...) }
func (r *recorder) Fatal(args ...any) { r.failed = fmt.Sprint(args...) }

func TestMissingSkipsUnlessRequired(t *testing.T) {
	t.Setenv(Shared, "")
	var r recorder
	Missing(&r, Shared, "trace %s absent", "x.up")
	require.Equal(t, "trace x.up absent; LAB_REQUIRE_SHARED=1 makes this a failure", r.skipped)
	require.Empty(t, r.failed)

	t.Setenv(Shared, "1")
	r = recorder{}
	Missing(&r, Shared, "trace %s absent", "x.up")
	require.Equal(t, "trace x.up absent; LAB_REQUIRE_SHARED=1 requires it", r.failed)
	require.Empty(t, r.skipped)

	// Only 1 requires: 0 (or anything else) still skips.
	t.Setenv(Shared, "0")
	r = recorder{}
	Missing(&r, Shared, "trace %s absent", "x.up")
	require.NotEmpty(t, r.skipped)
	require.Empty(t, r.failed)
}
