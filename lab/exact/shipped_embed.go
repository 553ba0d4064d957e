//go:build embedguest

package exact

import _ "embed"

// shippedGuest is the guest built into this lab binary: make dist (package
// internal/dist) builds it from the binary's own source and puts it here
// through go build -overlay, so the folder holds no file in the source
// tree.
//
//go:embed shipped/guest.wasm
var shippedGuest []byte
