package jobs

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/lab/jobspec"
	"github.com/nuvirahub/latencylab/reports"
)

// Over five nightly runs with different seeds, a deliberately regressed
// configuration (N7's old pipeline: capture first, then wait for the
// encoder) is flagged as a regression every time, and the unchanged one
// never. The baseline is made here from other seeds, as the committed one
// is, so the test stands alone; each nightly runs three seeds of its own
// against it, as the nightly does.
func TestNightlyFlagsTheOldPipelineEveryTime(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 132 sessions")
	}
	began := time.Now()
	// N7's two scenarios, the write-up's LAN (its 9 ms encoder is faster
	// than the refresh, so the old pipeline costs it nothing), and a
	// mobile network whose seeds differ a lot: the noise the unchanged
	// configuration must not be flagged for.
	scs, err := jobspec.Select("", []string{"pipeline-encoder-first-fix", "pipeline-encoder-first-old", "lan-animation", "mobile-spikes"})
	require.NoError(t, err)
	asWritten, err := jobspec.Parse(jobspec.AsWritten)
	require.NoError(t, err)
	oldPipeline, err := jobspec.Parse("old-pipeline")
	require.NoError(t, err)

	base := Run(t, Plan{Scenarios: scs, Variants: []Variant{variantOf(asWritten)}, Seeds: []uint64{1, 2, 3}})
	baselines := map[string]*reports.Baseline{}
	for _, b := range NewBaselines(scs, base, "", time.Time{}) {
		baselines[b.Scenario] = b
	}
	require.Len(t, baselines, len(scs))

	// All five nightlies' sessions in one plan keeps both cores busy;
	// they are judged night by night.
	var seeds []uint64
	for night := range uint64(5) {
		seeds = append(seeds, 10*(night+1)+1, 10*(night+1)+2, 10*(night+1)+3)
	}
	sessions := Run(t, Plan{Scenarios: scs, Variants: []Variant{variantOf(asWritten), variantOf(oldPipeline)}, Seeds: seeds})
	t.Logf("%d sessions in %.1f s wall", len(base)+len(sessions), time.Since(began).Seconds())

	// The ten judgements side by side: each is a bootstrap of its own
	// (about 0.2 s of one core; its source seeded by scenario and
	// metric, so the verdicts are the same in any order), reading the
	// sessions and baselines and writing nothing they share.
	judged := make([][2]*Judgement, 5)
	var wg sync.WaitGroup
	for night := range 5 {
		nightSeeds := seeds[3*night : 3*night+3]
		for i, variant := range []string{jobspec.AsWritten, "old-pipeline"} {
			wg.Go(func() {
				var mine []Session
				for _, s := range sessions {
					if s.Variant == variant && slices.Contains(nightSeeds, s.Seed) {
						mine = append(mine, s)
					}
				}
				judged[night][i] = Judge(baselines, scs, mine, false, reports.Options{})
			})
		}
	}
	wg.Wait()

	var table strings.Builder
	table.WriteString("| night | seeds | as-written flagged | old-pipeline flagged | old-pipeline's regressions |\n|---|---|---|---|---|\n")
	for night := range 5 {
		nightSeeds := seeds[3*night : 3*night+3]
		same, old := judged[night][0], judged[night][1]
		require.Empty(t, same.Errors)
		require.Empty(t, old.Errors)
		var regressed []string
		for _, v := range old.Regressions() {
			regressed = append(regressed, v.Scenario+" "+v.Metric.Name)
		}
		fmt.Fprintf(&table, "| %d | %s | %s | %s | %s |\n", night+1, seedList(nightSeeds),
			yesNo(same.Failed()), yesNo(old.Failed()), strings.Join(regressed, ", "))
		require.Empty(t, same.Regressions(), "night %d: the unchanged configuration flagged:\n%s", night+1, same.Summary())
		require.NotEmpty(t, old.Regressions(), "night %d: the old pipeline not flagged:\n%s", night+1, old.Summary())
		// The old pipeline is the documented bug: the scenario that
		// guards N7's fix must be among what regressed, by its median.
		require.Contains(t, regressed, "pipeline-encoder-first-fix latency.median", "night %d:\n%s", night+1, old.Summary())
		t.Logf("night %d, as-written: %s", night+1, same.Summary())
		t.Logf("night %d, old-pipeline: %s", night+1, old.Summary())
	}
	t.Logf("\n%s(%.1f s wall)", table.String(), time.Since(began).Seconds())
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
