// Package relay owns the lab's relay path (findings N18 and N19): a relay
// node that forwards a session's QUIC datagrams between its two peers, the
// agent and the viewer, byte for byte, and the peer side that reaches it over
// UDP or, where UDP is blocked, inside a WebSocket over a stream connection.
//
// The relay never terminates QUIC: the TLS handshake runs end to end through
// it, so it sees only ciphertext and the peers keep one session whichever way
// their packets travel. A relay is not open: the connection broker registers
// a session (Server.Register) before its peers bind to it with a small control
// message, and datagrams from an address bound to no session are dropped.
//
// Both sides use only the time package, channels and timers, so the relay
// runs in real time over real sockets and inside a testing/synctest bubble
// over netem's in-memory network and stream listeners, where every delay it
// adds is exact.
package relay
