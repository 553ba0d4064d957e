package netem

import "time"

// DocumentedBadLink returns fresh impairments for one direction of the
// network NuviraHub's write-up tested its fixed bitrate on (finding N9):
// 25 ms one way, 1% random loss, 5 Mbit/s. The write-up does not give the
// buffer size; the queue holds 1000 packets, tc netem's default limit, which
// is what a "tc qdisc add ... netem delay 25ms loss 1% rate 5mbit" gets.
func DocumentedBadLink() []Impairment {
	return []Impairment{
		&Rate{Rate: 5_000_000, Queue: QueueLimit{Packets: 1000}},
		&Loss{Probability: 0.01},
		&Delay{Delay: 25 * time.Millisecond},
	}
}
