//go:build race

package lab

// raceEnabled: the tests run under the race detector, which slows every
// goroutine (the links' included) several times: a real-time session's
// figures are then the detector's, not the network's.
const raceEnabled = true
