//go:build race

package main

// raceEnabled: the tests run under the race detector, which slows every
// goroutine (the links' included) several times.
const raceEnabled = true
