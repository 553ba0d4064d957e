//go:build !embedguest

package exact

// shippedGuest is nil: without the embedguest tag (make dist's) the guest
// is built from the module's source on first use.
var shippedGuest []byte
