package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/netem/quicpair"
)

// demoConfig is what the demo's flags set.
type demoConfig struct {
	duration time.Duration
	delay    time.Duration
	loss     float64
	rate     float64 // Mbit/s
	seed     uint64
}

func parseDemo(args []string, out io.Writer) (demoConfig, error) {
	var c demoConfig
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "how long the transfer runs")
	fs.DurationVar(&c.delay, "delay", 25*time.Millisecond, "one-way delay, each direction")
	fs.Float64Var(&c.loss, "loss", 1, "random loss in percent, each direction")
	fs.Float64Var(&c.rate, "rate", 5, "bottleneck rate in Mbit/s, each direction (queue: 1000 packets)")
	fs.Uint64Var(&c.seed, "seed", 1, "seed of the links' random decisions")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch {
	case fs.NArg() > 0:
		return c, fmt.Errorf("demo: unexpected argument %q", fs.Arg(0))
	case c.duration <= 0:
		return c, fmt.Errorf("demo: -duration %v: must be positive", c.duration)
	case c.delay < 0:
		return c, fmt.Errorf("demo: -delay %v: must not be negative", c.delay)
	case c.loss < 0 || c.loss > 100:
		return c, fmt.Errorf("demo: -loss %v: expected a percentage in [0, 100]", c.loss)
	case c.rate <= 0:
		return c, fmt.Errorf("demo: -rate %v: expected Mbit/s above 0", c.rate)
	}
	return c, nil
}

// impairments builds one direction of the demo's link.
func (c demoConfig) impairments() []netem.Impairment {
	return []netem.Impairment{
		&netem.Rate{Rate: int64(c.rate * 1e6), Queue: netem.QueueLimit{Packets: 1000}},
		&netem.Loss{Probability: c.loss / 100},
		&netem.Delay{Delay: c.delay},
	}
}

func demo(args []string, out io.Writer) error {
	c, err := parseDemo(args, out)
	if err != nil {
		return err
	}
	server, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return err
	}
	defer server.Close()
	client, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return err
	}
	defer client.Close()
	proxy, err := netem.NewProxy(netem.ProxyConfig{
		Target:  server.LocalAddr().String(),
		Forward: netem.LinkConfig{Name: "forward", Seed: c.seed, Impairments: c.impairments()},
		Reverse: netem.LinkConfig{Name: "reverse", Seed: c.seed, Impairments: c.impairments()},
	})
	if err != nil {
		return err
	}
	defer proxy.Close()
	fmt.Fprintf(out, "QUIC bulk transfer for %v: client %v -> proxy %v -> server %v\n",
		c.duration, client.LocalAddr(), proxy.Addr(), server.LocalAddr())
	fmt.Fprintf(out, "each direction: %v delay, %.3g%% loss, %.3g Mbit/s, 1000-packet queue\n", c.delay, c.loss, c.rate)

	ctx, cancel := context.WithTimeout(context.Background(), c.duration+30*time.Second)
	defer cancel()
	pair, err := quicpair.Open(ctx, server, client, proxy.Addr(), nil)
	if err != nil {
		return err
	}
	defer pair.Close()

	stop := make(chan struct{})
	statusDone := make(chan struct{})
	go func() {
		defer close(statusDone)
		status(out, proxy, stop)
	}()
	res, err := quicpair.Bulk(ctx, pair, c.duration)
	close(stop)
	<-statusDone
	if err != nil {
		return err
	}
	fwd, _ := proxy.Stats()
	fmt.Fprintf(out, "\nresult: %v\n", res)
	fmt.Fprintf(out, "forward link: offered %d packets, delivered %d, lost %d, queue drops %d, queueing mean %v max %v\n",
		fwd.Offered.Packets, fwd.Delivered.Packets, fwd.Dropped[netem.DropLoss].Packets,
		fwd.Dropped[netem.DropQueue].Packets, fwd.Queued.Mean().Round(time.Microsecond), fwd.Queued.Max.Round(time.Microsecond))
	return nil
}

// status prints a live line every second: what the forward link delivered
// in that second and what waits in its queue. On a terminal it rewrites one
// line; elsewhere it prints one line a second.
func status(out io.Writer, proxy *netem.Proxy, stop <-chan struct{}) {
	tty := false
	if f, ok := out.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	start := time.Now()
	var last uint64
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		fwd, _ := proxy.Stats()
		line := fmt.Sprintf("%4.0fs  forward %6.3f Mbit/s  queue %4d packets  lost %d",
			time.Since(start).Seconds(), float64(fwd.Delivered.Bytes-last)*8/1e6, fwd.Backlog.Packets,
			fwd.Dropped[netem.DropLoss].Packets)
		last = fwd.Delivered.Bytes
		if tty {
			fmt.Fprintf(out, "\r%s", line)
		} else {
			fmt.Fprintln(out, line)
		}
	}
}
