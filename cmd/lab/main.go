// Command lab is the latency lab's command line: demo, a real-time QUIC bulk
// transfer over loopback through the impairment proxy with the documented
// bad-network conditions; codecs, the codec benchmark. The scenario suite
// runs inside go test (make suite); reports and the standalone proxy come
// with their issues.
package main

import (
	"fmt"
	"os"
)

const usage = `usage: lab <command> [flags]

commands:
  demo    QUIC bulk transfer through the real-time impairment proxy on loopback
  codecs  the codec benchmark: tile XOR+zstd vs Hextile vs ZRLE (E1-E13)

Run "lab <command> -h" for a command's flags.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "demo":
		err = demo(os.Args[2:], os.Stdout)
	case "codecs":
		err = codecs(os.Args[2:], os.Stdout)
	case "-h", "-help", "--help", "help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "lab: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "lab:", err)
		os.Exit(1)
	}
}
