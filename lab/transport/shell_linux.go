package transport

import (
	"context"
	"time"

	"github.com/nuvirahub/latencylab/lab/traffic"
	"github.com/nuvirahub/latencylab/netem/kernel"
)

// ShellTraffic is a scenario's traffic running beside another program in
// lab shell's pair: each tcp-bulk flow the kernel's own TCP between the
// host (B, the far end: the internet, for a download) and the program's
// namespace (A), across the same two links, from its start to its stop,
// counted from zero, or to Finish. The flows are those of
// plan.ShellLinks, which CheckKernelFlows let through.
type ShellTraffic struct{ run *traffic.Run }

// StartShellTraffic starts flows on pair, their instants counted from
// zero (the links' epoch), their random choices from seed.
func StartShellTraffic(ctx context.Context, pair *kernel.Pair, flows []traffic.Flow, seed uint64, zero time.Time) *ShellTraffic {
	if len(flows) == 0 {
		return nil
	}
	sch := traffic.Schedule{Seed: seed, Zero: zero, End: zero.Add(shellUntilFinish)}
	return &ShellTraffic{run: traffic.Start(ctx, kernelFlows{pair: pair, farB: true}, flows, sch)}
}

// shellUntilFinish is the stop of a shell's flow without one: it runs
// until Finish, the program's end, which no one knows in advance.
const shellUntilFinish = 100 * 365 * 24 * time.Hour

// Finish stops the flows still running and returns what each measured;
// a flow that never started has no figures, and one without a stop keeps
// Stop 0: it ran until Finish.
func (t *ShellTraffic) Finish() []traffic.Result {
	if t == nil {
		return nil
	}
	res := t.run.Finish()
	for i := range res {
		if res[i].Flow.Stop == shellUntilFinish {
			res[i].Flow.Stop = 0
		}
	}
	return res
}
