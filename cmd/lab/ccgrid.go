package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/nuvirahub/latencylab/reports/ccgrid"
	"github.com/nuvirahub/latencylab/reports/render"
)

// ccgridOptions are lab ccgrid's flags, checked.
type ccgridOptions struct {
	grid ccgrid.Grid
	out  string
	from string
}

// parseCCGrid reads lab ccgrid's flags into the grid to run.
func parseCCGrid(args []string, out io.Writer) (ccgridOptions, error) {
	fs := flag.NewFlagSet("ccgrid", flag.ContinueOnError)
	fs.SetOutput(out)
	seconds := fs.Float64("seconds", ccgrid.DefaultDuration.Seconds(), "length of each cell's bulk flow in seconds (the first quarter, at most 2 s, is warm-up)")
	dir := fs.String("out", "out/ccgrid", "report folder: ccgrid.json, ccgrid-table.md, report.md, report.html and the plots")
	ccs := fs.String("controllers", "bbr,cubic,reno", "comma-separated TCP congestion controllers (net.ipv4.tcp_available_congestion_control)")
	seed := fs.Uint64("seed", ccgrid.DefaultSeed, "seed of every cell's links (the same losses for every controller of a column)")
	from := fs.String("from", "", "render the report from this ccgrid.json instead of running")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: lab ccgrid [flags]

The congestion-controller comparison (issue 10, finding N11): one bulk TCP
flow per controller and network condition (random loss 0, 0.5, 1, 2, 5% at
25 and 100 ms one way, 5 Mbit/s, 1000-packet queue; and the cellular-steady
trace), one at a time through netem's kernel mode. Needs Linux, root and
/dev/net/tun; about (cells x seconds) of wall time, 33 x 10 s by default.
Writes tables, plots and report.md/report.html, and states N11's verdict.

flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return ccgridOptions{}, err
	}
	if fs.NArg() > 0 {
		return ccgridOptions{}, fmt.Errorf("ccgrid: unexpected argument %q", fs.Arg(0))
	}
	g := ccgrid.DefaultGrid()
	g.Seconds, g.Seed = *seconds, *seed
	var err error
	if g.Controllers, err = ccgrid.ParseControllers(*ccs); err != nil {
		return ccgridOptions{}, err
	}
	if err := g.Validate(); err != nil {
		return ccgridOptions{}, err
	}
	return ccgridOptions{grid: g, out: *dir, from: *from}, nil
}

// ccgridCmd runs the grid (or reads a run's JSON) and writes its report.
// An interrupt stops the run after the cell in progress is abandoned; the
// cells done by then are still written, marked incomplete.
func ccgridCmd(args []string, stdout, stderr io.Writer) error {
	opt, err := parseCCGrid(args, stderr)
	if err != nil {
		return err
	}
	var rep *ccgrid.Report
	if opt.from != "" {
		if rep, err = ccgrid.ReadReport(opt.from); err != nil {
			return err
		}
	} else {
		if err := ccgrid.Check(opt.grid); err != nil {
			return fmt.Errorf("ccgrid: %w (the grid needs kernel mode: run as root on Linux with /dev/net/tun)", err)
		}
		root, err := moduleRoot()
		if err != nil {
			return fmt.Errorf("ccgrid: the cellular column reads %s from the checkout, and the working directory is not inside it", ccgrid.CellularDown)
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		fmt.Fprintf(stderr, "ccgrid: %d cells of %g s, about %s\n", opt.grid.Cells(), opt.grid.Seconds,
			(time.Duration(opt.grid.Cells()) * opt.grid.Duration()).Round(time.Second))
		var runErr error
		rep, runErr = ccgrid.Run(ctx, opt.grid, root, stderr)
		if rep == nil {
			return runErr
		}
		if runErr != nil {
			// Keep what the finished cells measured: minutes of flows.
			if err := ccgrid.WriteReport(opt.out, rep); err != nil {
				return errors.Join(runErr, err)
			}
			return fmt.Errorf("%w (the %d finished cells are in %s)", runErr, len(rep.Cells), opt.out)
		}
	}
	if err := ccgrid.WriteReport(opt.out, rep); err != nil {
		return err
	}
	if n, err := rep.N11(); err == nil {
		fmt.Fprintf(stdout, "%s\n\n", n.Sentence(rep.Grid.Controllers))
	}
	fmt.Fprint(stdout, render.Markdown(&render.Doc{Sections: []render.Section{{Tables: rep.Tables()}}}))
	base := filepath.Join(opt.out, ccgrid.ReportBase)
	fmt.Fprintf(stdout, "\n%d cells in %s wall; report: %s.md, %s.html\n", len(rep.Cells),
		time.Duration(rep.WallSeconds*float64(time.Second)).Round(time.Second), base, base)
	return nil
}
