package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/nuvirahub/latencylab/lab"
	"github.com/nuvirahub/latencylab/lab/result"
)

// openmetricsCmd exports a result file as OpenMetrics with timestamps, so
// that a past run (virtual time, which has no wall clock of its own) can
// be loaded into Prometheus with promtool tsdb create-blocks-from
// openmetrics and looked at in Grafana, its time zero placed at -start.
func openmetricsCmd(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("openmetrics", flag.ContinueOnError)
	fs.SetOutput(out)
	start := fs.String("start", "2026-01-01T00:00:00Z", "the instant (RFC 3339) the run's time zero is placed at")
	file := fs.String("o", "", "output file (default: standard output)")
	fs.Usage = func() {
		fmt.Fprintln(out, "usage: lab openmetrics [-start RFC3339] [-o FILE] RESULT.json")
		fmt.Fprintln(out, "\nWrites a result's time series as OpenMetrics with timestamps, for promtool tsdb create-blocks-from openmetrics.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("openmetrics: name one result file")
	}
	at, err := time.Parse(time.RFC3339, *start)
	if err != nil {
		return fmt.Errorf("openmetrics: -start: %w", err)
	}
	r, err := result.Read(fs.Arg(0))
	if err != nil {
		return fmt.Errorf("openmetrics: %w", err)
	}
	if *file == "" {
		return lab.WriteOpenMetrics(out, r, at)
	}
	f, err := os.Create(*file)
	if err != nil {
		return fmt.Errorf("openmetrics: %w", err)
	}
	w := bufio.NewWriter(f)
	err = lab.WriteOpenMetrics(w, r, at)
	err = errors.Join(err, w.Flush(), f.Close())
	if err != nil {
		return fmt.Errorf("openmetrics: %w", err)
	}
	return nil
}
