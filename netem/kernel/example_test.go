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
