//go:build !race

package lab

// raceEnabled: see race_test.go.
const raceEnabled = false
