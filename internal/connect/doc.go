// Package connect owns how the lab's two PCs reach each other (findings N17,
// N18, N19 and E14): the standard two-site network they sit on (Topology),
// the rendezvous service that tells each the other's addresses (Broker), and
// the strategy that turns those into one QUIC connection (Dial for the
// viewer, Accept for the agent). The strategy tries a direct path first,
// hole punching through both routers and preferring the LAN when both PCs
// share one; then the relay over UDP; then the relay inside a WebSocket where
// UDP is blocked. Every path carries the same end-to-end encrypted QUIC
// session, so the relay never sees plaintext.
//
// Everything uses the time package, goroutines and net interfaces only, so
// the same code runs in real time and inside a testing/synctest bubble over
// netem's in-memory networks, where every connect time is exact.
package connect
