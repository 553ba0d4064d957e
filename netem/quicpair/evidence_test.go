package quicpair

import (
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/internal/evidence"
	"github.com/nuvirahub/latencylab/netem"
)

// transferSpread is how far a run's figures move from the usual run's: the
// runtime's random choice among goroutines ready at one virtual instant
// (see TestQUICTransferRepeatsForASeed) sends a few more or fewer packets
// about one run in ten. Measured over 52 runs of 1280-byte packets, before
// the in-memory endpoints took DF: 18 116-18 207 packets against 18 118,
// goodput 2.951-2.966 Mbit/s; this is twice the widest.
const transferSpread = 0.01

// transferTries is how many runs may be made to meet the usual run, whose
// figures the texts must quote exactly: five runs all unusual is a chance
// of about one in a hundred thousand.
const transferTries = 5

// transferTexts are the texts that quote the 60 s transfer: the N9 and N11
// evidence of lab/findings.yaml and the paragraph of docs/netem.md.
func transferTexts(t *testing.T) []*evidence.Pin {
	return []*evidence.Pin{
		evidence.For(t, "N9", "go test ./netem/quicpair -run Transfer60s -v"),
		evidence.For(t, "N11", "go test ./netem/quicpair -run Transfer60s -v"),
		evidence.Doc(t, "docs/netem.md", "The documented bad", "holds the window down"),
	}
}

// pinTransfer checks the texts' figures against one transfer: exactly (as
// written) when exact is set, within transferSpread otherwise. Each figure
// is found by its pattern wherever a text holds it; a number no pattern
// claims fails too.
func pinTransfer(t *testing.T, d time.Duration, res BulkResult, toAgent netem.Stats, exact bool) error {
	var delay time.Duration
	var loss float64
	var rate int64
	for _, imp := range netem.DocumentedBadLink() {
		switch v := imp.(type) {
		case *netem.Delay:
			delay = v.Delay
		case *netem.Loss:
			loss = v.Probability
		case *netem.Rate:
			rate = v.Rate
		}
	}
	lost := float64(toAgent.Dropped[netem.DropLoss].Packets)
	offered := float64(toAgent.Offered.Packets)
	figures := []struct {
		pattern string
		values  []float64
	}{
		// The link: the preset the test runs over.
		{`\((\d+) ms, (\d+)% loss, (\d+) Mbit/s each way`, []float64{ms(delay), 100 * loss, float64(rate) / 1e6}},
		{`on a (\d+) s QUIC transfer`, []float64{d.Seconds()}},
		// What the link did to the transfer's packets.
		{`(\d+) of ([\d ]+) QUIC packets lost, ([\d.]+)%`, []float64{lost, offered, 100 * lost / offered}},
		// What quic-go made of it.
		{`([\d.]+) Mbit/s of goodput, (\d+)%`, []float64{res.Goodput() / 1e6, 100 * res.Goodput() / float64(rate)}},
		{`mean (\d+) ms`, []float64{ms(toAgent.Queued.Mean())}},
	}
	var errs []error
	for _, p := range transferTexts(t) {
		for _, f := range figures {
			if !regexp.MustCompile(f.pattern).MatchString(p.String()) {
				continue
			}
			if exact {
				p.Figure(f.pattern, f.values...)
			} else {
				p.Within(f.pattern, transferSpread, f.values...)
			}
		}
		errs = append(errs, p.Err())
	}
	return errors.Join(errs...)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// pinTransferFigures pins the figures the findings and docs/netem.md quote
// from the 60 s transfer: every run within the spread, and the usual run's
// figures exactly as written, so that a figure cannot go stale by less
// than the spread either. res and toAgent are the first run's.
func pinTransferFigures(t *testing.T, d time.Duration, res BulkResult, toAgent netem.Stats) {
	for try := 1; ; try++ {
		require.NoError(t, pinTransfer(t, d, res, toAgent, false), "a run moved more than the transfer's spread (%.0f%%) from the figures written", 100*transferSpread)
		err := pinTransfer(t, d, res, toAgent, true)
		if err == nil {
			return
		}
		if try == transferTries {
			require.NoError(t, err, "none of %d runs gave the figures written: write the usual run's", transferTries)
		}
		t.Logf("run %d (%v packets offered) does not give the figures written; running again, in case it is not the usual run", try, toAgent.Offered.Packets)
		res, toAgent = bulkOverBadNetwork(t, 1, d)
	}
}
