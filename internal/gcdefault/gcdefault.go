// Package gcdefault sets the garbage collector's target for the programs
// that run the lab's sessions natively in virtual time: the lab package's
// test binary (the scenario suite and the library's tests, make suite) and
// the jobs' worker processes (lab test -exact=false, sweeps, the nightly,
// compare) call Set first thing. Importing it does nothing; a library
// package never calls it, so a program that imports the lab keeps its own
// setting.
//
// Why: a session in virtual time is CPU-bound and allocates steadily (QUIC's
// packets, frames, timers) while what it keeps alive is small, so at Go's
// default (GOGC=100) the collector runs often for little. On the scenario
// library, 49 sessions side by side, GOGC=400 took about a tenth of the CPU
// off (docs/performance.md, "The library and the garbage collector").
//
// The lab command does not call it: it runs no session natively itself
// (its jobs run them in worker processes, which do), and its exact sessions
// run under wazero, whose instances' memories are most of its heap: there
// the target saved no CPU and raised the peak memory by a third (572 to 758
// MB for four library scenarios, two at a time). The exact sessions' guest
// is a program of its own (lab/sessionproc/guest) and does not call it
// either: its collector's timing is part of an exact result
// (docs/determinism.md).
package gcdefault

import (
	"os"
	"runtime/debug"
)

// Percent is the collector's target (as GOGC) that Set gives a program.
const Percent = 400

// Set sets the collector's target to Percent, unless the user set GOGC
// (which then stands, off included).
func Set() {
	if _, ok := os.LookupEnv("GOGC"); ok {
		return
	}
	debug.SetGCPercent(Percent)
}
