# The lab's jobs. `make suite` is the main job: the whole scenario library in
# virtual time, a result folder (a JSON file per scenario, summary.md,
# reproduction.md) and a summary table. synctest needs a *testing.T, so the
# suite runs inside go test.
RESULTS ?= out/results

.PHONY: suite readme test
# go test -C lab runs in local-directory mode, which streams the progress
# lines and the table (package-list mode would hide them when all pass).
suite:
	go test -C lab -run '^TestLibrary$$' -count=1 -args -out $(abspath $(RESULTS))

# readme runs the suite and rewrites the README's reproduction table from it.
readme:
	go test -C lab -run '^TestLibrary$$' -count=1 -args -out $(abspath $(RESULTS)) -readme

test:
	go vet ./... && go test ./...

# sweep runs the ABR sweep of reports/sweep/default-grid.yaml (72 points:
# threshold 30-120 ms x decrease 10-30% x increase 5-25% x hold 1-1.5 s, over
# abr-capacity-drop, abr-spikes-fix, abr-lossy and abr-mobile-still-fix x 3
# seeds) on every core into $(SWEEP_OUT): sweep.md/.html, sweep-table.md and
# the Pareto plots. SHARD=i/n runs one shard and writes only its part file;
# merge the parts with: go run ./cmd/lab sweep-merge -out DIR PART...
SWEEP_GRID ?= reports/sweep/default-grid.yaml
SWEEP_OUT ?= out/sweep
SHARD ?= 1/1
.PHONY: sweep
sweep:
	go test -C reports/jobs -tags jobs -run '^TestSweep$$' -count=1 -timeout 0 -args -grid $(abspath $(SWEEP_GRID)) -shard $(SHARD) -out $(abspath $(SWEEP_OUT))

# nightly runs the scenario library with several seeds against the committed
# baseline (testdata/baselines), writes $(NIGHTLY_OUT)/report.md and .html,
# and fails on a regression, listing each with its evidence. accept-baseline
# runs it and writes its runs as the new baseline, to commit after an
# intended change.
NIGHTLY_SEEDS ?= 1,2,3
NIGHTLY_OUT ?= out/nightly
.PHONY: nightly accept-baseline
nightly:
	go test -C reports/jobs -tags jobs -run '^TestNightly$$' -count=1 -timeout 0 -args -seeds $(NIGHTLY_SEEDS) -out $(abspath $(NIGHTLY_OUT))
accept-baseline:
	go test -C reports/jobs -tags jobs -run '^TestNightly$$' -count=1 -timeout 0 -args -seeds $(NIGHTLY_SEEDS) -out $(abspath $(NIGHTLY_OUT)) -accept
