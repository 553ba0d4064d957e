//go:build !linux

package netem

import "net"

// Elsewhere than Linux the proxy does not read or set the ECN bits: what it
// relays leaves Not-ECT.

var tosOOBSize = 0

func enableRecvTOS(*net.UDPConn) {}

func cmsgECN([]byte) ECN { return NotECT }

func appendTOSCmsg(b []byte, _ ECN, _ bool) []byte { return b }
