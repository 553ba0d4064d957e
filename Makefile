# The lab's jobs. `make suite` is the main job: the whole scenario library in
# virtual time, a result folder (a JSON file per scenario, summary.md,
# reproduction.md) and a summary table. synctest needs a *testing.T, so the
# suite runs inside go test. None of them needs ../shared: the findings live
# in lab/findings.yaml, and the scenarios that replay shared traces skip.
RESULTS ?= out/results

.PHONY: suite readme test bounds
# go test -C lab runs in local-directory mode, which streams the progress
# lines and the table (package-list mode would hide them when all pass).
suite:
	go test -C lab -run '^TestLibrary$$' -count=1 -args -out $(abspath $(RESULTS))

# readme runs the suite and rewrites the reproduction table
# (docs/reproduction.md) and the README's class counts from it; it checks
# both files' markers before it runs.
readme:
	go test -C lab -run '^TestLibrary$$' -count=1 -args -out $(abspath $(RESULTS)) -readme

# test is the tests exactly as CI runs them (.ci/run): vet (the jobs-tagged
# files too), every test, the race detector over the concurrent packages and
# every fuzz target for 2000 inputs; go test ./... alone is the quick part.
# After vet, three parts run side by side, each line of their output
# prefixed with its part's name: the unit tests that share the cores
# (unit-shared), the race detector's (race) and the fuzzing (fuzz). One
# after another, each left a core idle for much of its time (tests waiting
# on servers, sessions in real time and subprocesses; links, which use
# one core; docs/performance.md has a clean run's figures, both ways).
# Then the tests that need the cores to themselves (unit-alone). A part
# that fails fails the run once the others are done.
test: vet
	@$(MAKE) --no-print-directory -j3 tagged-unit-shared tagged-race tagged-fuzz
	@$(MAKE) --no-print-directory unit-alone
.PHONY: vet unit unit-shared unit-alone race fuzz

# tagged-PART runs make PART with each line of its output prefixed with
# PART's name; it fails when PART does (bash's pipefail).
SHELL = /bin/bash
.SHELLFLAGS = -o pipefail -c
tagged-%:
	@$(MAKE) --no-print-directory $* 2>&1 | sed -u 's/^/$* | /'

# The jobs tag holds the entry points of make nightly and make sweep (and
# lab nightly, compare, sweep) in lab/jobs, and a check of the docs'
# jobs commands: vet type-checks them, test compiles them (JOBS_PKGS, the
# only packages with jobs-tagged files). Without cgo, OpenH264's binding
# is a stub (agent/encoder/openh264), the only package with cgo: the build
# that the exact mode's WebAssembly and a machine without a C compiler
# make must still type-check. The stub is vetted without cgo, and
# TestStubDeclaresTheBindingsAPI holds its exported API to the binding's,
# so that every importer builds with either; vetting the whole tree
# without cgo rebuilt every package (net and all above it) for nothing
# else. The exact mode's tests build the lab for WebAssembly, without cgo,
# in make unit.
JOBS_PKGS = ./lab/jobs ./internal/docscheck
vet:
	go vet ./... && go vet -tags jobs $(JOBS_PKGS) && CGO_ENABLED=0 go vet ./agent/encoder/openh264/...
# TEST_FLAGS are go test's in every part below. make vet has vetted every
# package and its tests with all of go vet's analyzers, so go test's own
# vet (a subset of them) is off: it ran again for each build of the tests,
# plain, race and fuzz-instrumented, each time with every dependency's
# facts (190 s of CPU of a clean run's 1850; only the constant of the two
# race-tagged test files goes unvetted). -ldflags=-w leaves out the test
# binaries' DWARF, which only a debugger reads (a third of a link).
TEST_FLAGS = -vet=off -ldflags=-w
# The tests that judge real time (delays, rates and latencies through real
# sockets, kernel links and VNC servers against their bounds) measure the
# machine as well as the lab: on 2 cores shared with other test binaries
# they miss their bounds. They run after the rest (make unit-alone), with
# the machine to themselves but for each other, in the order below
# (TIMING_FIRST, then TIMING_A, TIMING_B and TIMING_C side by side; each
# entry a package and its tests, run as one binary).
TIMING_NAMES = TestEnginesAgree|TestTrafficRealTime|TestShellMeasures|TestRunKernelTraffic|TestIperf3MatchesBulk|TestHostPairReachesHostServers|TestRunQUICCell|TestX11vncLatency|TestDelayMatchesLink
# TestEnginesAgree holds its two real-time engines' media medians to each
# other within 1 ms, and TestDelayMatchesLink a median round trip to 2 ms
# (its timers' p99 too): they run alone. Beside another package's tests,
# the engines' difference grew from 0.1-0.3 ms alone to 0.3-0.6 ms (three
# iperf3 flows) and 1.1 ms (cmd/lab's 5000 datagrams a second). The rest
# keep less than half a core busy each (a third of a core on average: 57 s
# of CPU over 147 s), so they run three at a time, in streams of about
# 43 s each: what waits on real time, not on the cores, overlaps (147 s one
# package at a time; 89-91 s in two streams; 72-74 s so).
TIMING_FIRST = ./netem/kernel:TestDelayMatchesLink ./lab:TestEnginesAgree
TIMING_A = ./lab:TestTrafficRealTime ./lab/vnc:TestX11vncLatency
TIMING_B = ./cmd/lab:TestShellMeasures ./lab/ccgrid:TestRunQUICCell
TIMING_C = ./netem/kernel:TestHostPairReachesHostServers,TestIperf3MatchesBulk ./cmd/lab:TestRunKernelTraffic,TestShellTraffic
# TIMING_TESTS is every test the schedule runs (the docs' check leaves
# them to it): the timing tests and TestShellTraffic, whose figures are
# judged only without the race detector. A test holds the schedule to it.
TIMING_TESTS = ^($(TIMING_NAMES)|TestShellTraffic)$$
TIMING_PKGS = ./lab ./cmd/lab ./netem/kernel ./lab/ccgrid ./lab/vnc
# The docs' check that runs every documented go test command's pattern
# (internal/docscheck) lists what the patterns select from the packages'
# test files, and builds the test binaries only of the packages whose
# tests it runs (the subtest patterns' and the collecting tests', lab
# among them): run beside the unit tests, it compiled those packages as
# their own tests did at the same time, with nothing yet in the cache;
# after them it only links.
DOCS_RUN = TestDocumentedTestCommandsRun
# The packages the race detector covers (RACE_PKGS) run their tests under
# it alone, in make race, all but RACE_SKIP's; unit runs none of theirs but
# those race leaves out: the exact sessions of RACE_LEFT (at the end of make
# unit-shared, since they keep the cores busy), the timing tests, and
# TestShellTraffic, whose figures are judged only without the detector
# (both in make unit-alone). Running all of them twice cost their run again
# (warm: netem/kernel's 20 s, cmd/lab's 17 s beside RACE_LEFT's 11.5 s).
RACE_LEFT = TestLabTest|TestLabTestOwnTraceSegment|TestLabTestNativeOnlyScenarioRunsNatively
MODULE = github.com/nuvirahub/latencylab
UNIT_PKGS = $(filter-out $(patsubst ./%,$(MODULE)/%,$(RACE_PKGS)),$(shell go list ./...))
unit:
	@$(MAKE) --no-print-directory unit-shared
	@$(MAKE) --no-print-directory unit-alone
# UNIT_P is how many of unit-shared's builds and test binaries run at once.
# go test's default, one per core, let lab (about 300 s) and lab/cluster
# (about 400 s, most of it waiting for its processes and the exact guest's
# build) hold both slots, so that every package after them in the list ran
# only once the race and fuzz parts were done and the cores were idle.
UNIT_P ?= 4
unit-shared:
	go test $(TEST_FLAGS) -p $(UNIT_P) -skip '^($(TIMING_NAMES)|$(DOCS_RUN))$$' $(UNIT_PKGS)
	go test $(TEST_FLAGS) -run '^($(RACE_LEFT))$$' ./cmd/lab
	go test $(TEST_FLAGS) -run '^$(DOCS_RUN)$$' ./internal/docscheck
	go test $(TEST_FLAGS) -tags jobs -run '^$$' ./lab/jobs
	@$(MAKE) --no-print-directory timing-bins

# The timing tests' binaries (TIMING_BIN, a file per package) are linked
# at the end of make unit-shared, beside the other parts' work, and
# make unit-alone runs them, each in its package's folder as go test
# would: go test -p 1 linked each package's binary between the runs, 20 s
# of one busy core on an otherwise idle machine.
# go test -c leaves an up-to-date binary as it is, so unit-alone's own
# timing-bins links nothing after unit-shared's.
# TIMING_BIN_OF is, in the loops below, the binary of the package in the
# shell's $p: ./lab/vnc's is lab-vnc.test (lab and cmd/lab are both
# lab.test to go test -c).
TIMING_BIN = $(CURDIR)/out/timing-bin
TIMING_BIN_OF = $(TIMING_BIN)/$$(echo $${p\#./} | tr / -).test
.PHONY: timing-bins
timing-bins:
	@mkdir -p $(TIMING_BIN)
	@for p in $(TIMING_PKGS); do \
	  go test $(TEST_FLAGS) -c -o $(TIMING_BIN_OF) $$p || exit 1; \
	done
unit-alone: timing-bins
	@status=0; \
	$(MAKE) --no-print-directory timing-runs RUNS='$(TIMING_FIRST)' || status=1; \
	$(MAKE) --no-print-directory -k -j3 timing-a timing-b timing-c || status=1; \
	exit $$status
.PHONY: timing-a timing-b timing-c timing-runs
timing-a:
	@$(MAKE) --no-print-directory timing-runs RUNS='$(TIMING_A)'
timing-b:
	@$(MAKE) --no-print-directory timing-runs RUNS='$(TIMING_B)'
timing-c:
	@$(MAKE) --no-print-directory timing-runs RUNS='$(TIMING_C)'
# timing-runs runs RUNS (package:Test,Test entries) one after another, each
# in its package's folder as go test would, and prints each one's output
# whole when it ends (three of them share the terminal), then its time. A
# binary that finds none of its tests fails (it would pass, testing
# nothing).
timing-runs:
	@status=0; for r in $(RUNS); do \
	  p=$${r%%:*}; names=$$(echo "$${r#*:}" | tr , '|'); out=$$(mktemp); \
	  began=$$(date +%s%N); \
	  if (cd $$p && $(TIMING_BIN_OF) -test.run "^($$names)\$$" -test.timeout 10m -test.paniconexit0) > $$out 2>&1 && \
	    ! grep -q '^testing: warning: no tests to run' $$out; \
	  then ms=$$(( ($$(date +%s%N) - began) / 1000000 )); cat $$out; printf 'ok  \t%s\t%s\t%d.%03ds\n' $$p "$$names" $$((ms / 1000)) $$((ms % 1000)); \
	  else cat $$out; printf 'FAIL\t%s\t%s\n' $$p "$$names"; status=1; fi; \
	  rm -f $$out; \
	done; exit $$status

# The race detector over the packages where goroutines meet outside a
# synctest bubble's single-threaded replay: netem (links, the real-time
# proxy, timers), the relay and the NAT routers, the connection strategy,
# the kernel mode (TUN readers and links in real time), the metrics'
# handler, the command line (lab run, lab proxy and its HTTP API), and
# lab's real-time, capture and kernel sessions. The rest of lab, and the
# library of sessions in virtual time, costs 137 s under -race against 15 s
# for this part, and adds no goroutines of its own.
RACE_PKGS = ./netem ./netem/relay ./netem/nat ./netem/kernel ./internal/connect ./lab/metrics ./cmd/lab
# TestLabTest, TestLabTestOwnTraceSegment and
# TestLabTestNativeOnlyScenarioRunsNatively run their sessions exact, in
# WebAssembly under wazero, whose compiler costs 100 s under the race
# detector against a few seconds without (the last one, left in, took
# cmd/lab's race run from 79 to 174 s); their goroutines are the
# command's and wazero's, which the unit run covers. The timing tests judge
# real time, which the race detector slows (10-27 s each, and their bounds
# then measure the detector); the code they drive in real time runs under
# it in the other tests of the same packages (TestShellTraffic,
# TestKernelTraffic, TestRealTimeSession, netem's proxy). The race run
# leaves both out (59 s of a clean CI run); make unit runs them.
RACE_SKIP = ^($(RACE_LEFT)|$(TIMING_NAMES))$$
race:
	go test $(TEST_FLAGS) -race -skip '$(RACE_SKIP)' $(RACE_PKGS)
	go test $(TEST_FLAGS) -race -skip '$(RACE_SKIP)' -run 'RealTime|Capture|Kernel' ./lab

# fuzz runs every fuzz target (func FuzzX in a _test.go file outside
# testdata, where the docs' check keeps its made-up tests) for FUZZTIME, one
# target per call as go test requires; a name the test binary does not know
# as a fuzz target fails the stage rather than fuzzing nothing. The budget
# is a count of inputs, not a duration: with a duration, Go 1.26's fuzzing
# coordinator can report "context deadline exceeded" as a failure when the
# deadline meets a busy worker (fixed in Go 1.27). 2000 inputs take 0.5-8 s
# a target here. Almost all of the stage is building: every package a fuzzed
# test imports, the standard library too, compiled again with coverage
# instrumentation, then a link per target. The first package (FUZZ_FIRST,
# the one with the fewest imports) runs alone and so compiles the
# instrumented standard library once; then FUZZ_JOBS packages at a time (a
# package's targets one after another), since a link or a small package's
# compile keeps one core busy; each package's output is printed whole when
# it is done. A failure fails the stage once every package has run.
FUZZTIME ?= 2000x
FUZZ_JOBS ?= 2
FUZZ_FIRST = ./internal/wire
fuzz:
	@$(MAKE) --no-print-directory fuzz-pkg PKG=$(FUZZ_FIRST)
	@grep -rl --include='*_test.go' --exclude-dir=testdata '^func Fuzz' . | xargs -n1 dirname | sort -u | grep -vx '$(FUZZ_FIRST)' | \
	  xargs -P $(FUZZ_JOBS) -I{} $(MAKE) --no-print-directory fuzz-pkg PKG={}

# fuzz-pkg runs the fuzz targets of one package (PKG), one after another,
# and prints what they said when all are done or one failed.
.PHONY: fuzz-pkg
fuzz-pkg:
	@out=$$(mktemp); status=0; \
	for target in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $(PKG)/*_test.go); do \
	  echo "go test $(TEST_FLAGS) -run '^$$' -fuzz '^$$target$$' -fuzztime $(FUZZTIME) $(PKG)" >> $$out; \
	  go test $(TEST_FLAGS) -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $(PKG) >> $$out 2>&1 || { status=1; break; }; \
	  if grep -q 'no fuzz tests to fuzz' $$out; then echo "$(PKG): $$target is not a fuzz target of its test binary" >> $$out; status=1; break; fi; \
	done; cat $$out; rm -f $$out; exit $$status

# bounds runs every library scenario 10 times at its seed and 10 times at
# seed+1000, natively and side by side as go test ./lab runs them, prints
# each expectation's spread beside its bound and the bound the rule gives
# (halfway, as ratios, between the spread and a 2x change), and rewrites the
# table in docs/testing.md. About a minute on 2 cores.
# BOUNDS_GROUP=rmcat measures one group's scenarios alone and rewrites only
# their rows of the table.
BOUNDS_RUNS ?= 10
BOUNDS_GROUP ?=
bounds:
	go test -C lab -run '^TestLibrarySpread$$' -count=1 -timeout 0 -args -spread $(BOUNDS_RUNS) -spread-doc -spread-group=$(BOUNDS_GROUP)

# policies runs the lossy, mobile, cellular and rmcat groups under each of
# the viewer's policies (drop, wait, keyframe, refresh) at two seeds, and
# the real encoder's twins with frames held back under the three it can
# take, and rewrites docs/policies.md's tables and plots. About 5 minutes
# on 2 cores.
.PHONY: policies
policies:
	go test -C lab -run '^TestPolicies$$' -count=1 -timeout 0 -args -policies-doc

# rmcat runs RFC 8867's test cases (the rmcat group, docs/rmcat.md) with each
# scenario's own controller, judged, and again with the other (abr <-> gcc),
# prints the two side by side and rewrites the table in docs/rmcat.md. About
# a minute on 2 cores; go test ./lab -run RMCAT alone runs the first pass.
.PHONY: rmcat
rmcat:
	go test -C lab -run '^TestRMCAT$$' -count=1 -timeout 0 -v -args -rmcat-both -rmcat-doc

# sweep runs the ABR sweep of lab/sweep/default-grid.yaml (72 points:
# threshold 30-120 ms x decrease 10-30% x increase 5-25% x hold 1-1.5 s, over
# abr-capacity-drop, abr-spikes-fix, abr-lossy and abr-mobile-still-fix x 3
# seeds) on every core into $(SWEEP_OUT): sweep.md/.html, sweep-table.md and
# the Pareto plots. SHARD=i/n runs one shard and writes only its part file;
# merge the parts with: go run ./cmd/lab sweep-merge -out DIR PART...
SWEEP_GRID ?= lab/sweep/default-grid.yaml
SWEEP_OUT ?= out/sweep
SHARD ?= 1/1
.PHONY: sweep
sweep:
	go test -C lab/jobs -tags jobs -run '^TestSweep$$' -count=1 -timeout 0 -args -grid $(abspath $(SWEEP_GRID)) -shard $(SHARD) -out $(abspath $(SWEEP_OUT))

# nightly runs the scenario library with several seeds against the committed
# baseline (testdata/baselines), writes $(NIGHTLY_OUT)/report.md and .html,
# and fails on a regression, listing each with its evidence. accept-baseline
# runs it and writes its runs as the new baseline, to commit after an
# intended change.
NIGHTLY_SEEDS ?= 1,2,3
NIGHTLY_OUT ?= out/nightly
.PHONY: nightly accept-baseline
nightly:
	go test -C lab/jobs -tags jobs -run '^TestNightly$$' -count=1 -timeout 0 -args -seeds $(NIGHTLY_SEEDS) -out $(abspath $(NIGHTLY_OUT))
accept-baseline:
	go test -C lab/jobs -tags jobs -run '^TestNightly$$' -count=1 -timeout 0 -args -seeds $(NIGHTLY_SEEDS) -out $(abspath $(NIGHTLY_OUT)) -accept

# dist builds the release into $(DIST_OUT): lab for linux/amd64 and
# linux/arm64 (lab-linux-amd64, lab-linux-arm64), each one file that runs
# every job with no Go toolchain and no source beside it: linked as a test
# binary, so that its native sessions are seeded, with its exact guest
# built from the same source and built in, and without cgo (no C library
# needed where it runs; the OpenH264 presets are then unavailable). The
# Dockerfile's default image is the slim one around it. How and why:
# internal/release, docs/architecture.md.
DIST_OUT ?= dist
.PHONY: dist
dist:
	go run ./internal/release/mkdist -out $(DIST_OUT) linux/amd64 linux/arm64
