// Package netem is the lab's impairment network: links that delay, jitter,
// lose, duplicate, corrupt, rate-limit, queue, stall and block packets, the
// in-memory network whose net.PacketConn endpoints route through them, and the
// real-time UDP proxy that applies the same links to any program's traffic.
//
// A Link is one direction of a path. It is a pipeline of impairments, each a
// small type in its own file, registered by name (see Register and New) so that
// scenarios can refer to them. The link decides a packet's fate when the packet
// enters it: every impairment maps the instant the packet reaches it to the
// instant it leaves (or drops it), in a fixed order of stages (gate, loss,
// bottleneck, delay), the way tc netem computes time_to_send at enqueue. The
// link then delivers the packet at that instant with an ordinary timer.
//
// Time is only ever read through the time package, so the same code runs in
// real time and inside a testing/synctest bubble, where a minute of traffic
// takes a fraction of a second and every duration is exact. Every random
// decision draws from a source seeded from the run's seed, the link's name and
// the impairment's place in it.
package netem
