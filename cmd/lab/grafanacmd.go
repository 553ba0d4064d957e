package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/nuvirahub/latencylab/grafana"
)

// grafanaCmd writes the lab's Grafana set-up (dashboards, provisioning,
// Prometheus, compose file) into a folder: a team's repository gets them
// from a lab binary alone.
func grafanaCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("grafana", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "grafana", "the folder to write the set-up into")
	force := fs.Bool("force", false, "replace files there that differ from the lab's (an edited dashboard)")
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: lab grafana [-out DIR] [-force]

Writes the lab's Grafana set-up into DIR: compose.yaml (Prometheus and
Grafana), prometheus.yml, the provisioning, the dashboards (latency, ABR,
link) and the import folder for past runs (lab openmetrics). Then, in DIR,
docker compose up -d; see the lab's grafana/README.md.

flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("grafana: unexpected argument %q", fs.Arg(0))
	}
	wrote, err := grafana.WriteSetUp(*out, *force)
	if errors.Is(err, grafana.ErrWouldOverwrite) {
		return err
	}
	if err != nil {
		return fmt.Errorf("grafana: %w", err)
	}
	fmt.Fprintf(stdout, "grafana: %d files written in %s; there: docker compose up -d, then http://localhost:3000\n", len(wrote), *out)
	return nil
}
