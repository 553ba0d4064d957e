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
