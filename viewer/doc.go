// Package viewer is the lab's remote-desktop viewer, the end a person looks
// at. It dials nothing itself: given a QUIC connection to an agent it opens
// the control stream, receives one frame per unidirectional stream, models
// decoding and the display (vsync, present time, and N8's display policy, old
// and fixed), estimates the offset between the agent's clock and its own with
// an NTP-style exchange, computes every displayed frame's capture-to-display
// latency and its network part as the product would (N1, N12), and reports
// the period's median and minimum to the agent every 250 ms.
//
// Beside its own measurements it writes the true instants of arrival,
// decoding, display and every drop to a groundtruth.Recorder, so that the lab
// can measure the measurement.
//
// One job per file: viewer.go runs a session and owns its goroutines,
// control.go the control stream, clocksync.go the offset estimate,
// receiver.go the frame streams, decoder.go the decode model, display.go the
// display policy, report.go the latency figures and reports, counters.go
// the counters.
package viewer
