//go:build linux

package kernel_test

import (
	"context"
	"fmt"
	"time"

	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/netem/kernel"
)

// One bulk TCP flow per congestion controller over the write-up's bad link
// (finding N11). It needs root; without Output it is compiled, not run.
func Example() {
	for _, cc := range []string{"bbr", "cubic", "reno"} {
		p, err := kernel.New(kernel.Config{
			AtoB: netem.LinkConfig{Seed: 11, Impairments: netem.DocumentedBadLink()},
			BtoA: netem.LinkConfig{Seed: 11, Impairments: netem.DocumentedBadLink()},
		})
		if err != nil {
			fmt.Println(err) // kernel.ErrUnavailable when not root
			return
		}
		res, err := kernel.Bulk(context.Background(), p, cc, 20*time.Second)
		p.Close()
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s: %.0f%% of the link, %d retransmits\n", cc, 100*res.Utilisation, res.Retransmits)
	}
}

// A program run behind 25 ms each way, reaching this machine's servers at
// the pair's B address (lab shell is this, with a scenario's links). It
// needs root; without Output it is compiled, not run.
func ExamplePair_CommandA() {
	delay := func() []netem.Impairment { return []netem.Impairment{&netem.Delay{Delay: 25 * time.Millisecond}} }
	p, err := kernel.New(kernel.Config{HostB: true,
		AtoB: netem.LinkConfig{Impairments: delay()}, BtoA: netem.LinkConfig{Impairments: delay()}})
	if err != nil {
		fmt.Println(err) // kernel.ErrUnavailable when not root
		return
	}
	defer p.Close()
	cmd, err := p.CommandA("curl", "-s", "http://"+p.AddrB().String()+":8000/")
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := cmd.Output()
	fmt.Println(len(out), err)
}
