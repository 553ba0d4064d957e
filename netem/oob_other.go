//go:build !linux

package netem

// socketOptions holds no socket where the lab does not speak quic-go's
// out-of-band API (oob_linux.go): a PacketConn there is a plain
// net.PacketConn, and quic-go runs it without DF and so without path MTU
// discovery.
type socketOptions struct{}

func (*socketOptions) close() {}
