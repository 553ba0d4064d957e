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

	"github.com/nuvirahub/latencylab/lab"
	"github.com/nuvirahub/latencylab/lab/ccgrid"
	"github.com/nuvirahub/latencylab/reports/render"
)

// ccgridOptions are lab ccgrid's flags, checked.
type ccgridOptions struct {
	grid ccgrid.Grid
	out  string
	from string
	// merge is an earlier run whose bulk cells fill the ones this run
	// leaves out (a -n11-only run beside a full grid).
	merge string
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
	quic := fs.Bool("quic", true, "add a QUIC (quic-go, NewReno) bulk row beside the TCP controllers")
	media := fs.Bool("media", true, "after the bulk grid, run media sessions with the ABR on top (QUIC and the WebSocket tunnel over each controller, on N11's link and the trace; QUIC beside a competing TCP flow of each controller on N11's link)")
	mediaSeconds := fs.Float64("media-seconds", ccgrid.DefaultMediaSeconds, "length of each media session in seconds")
	n11Only := fs.Bool("n11-only", false, "run only N11's column (25 ms, 1%) and the cellular trace, not the whole grid")
	merge := fs.String("merge", "", "with a run: take the bulk cells this run leaves out from this earlier ccgrid.json (same rows and seed)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: lab ccgrid [flags]

The congestion-controller comparison (finding N11): one bulk TCP
flow per controller and network condition (random loss 0, 0.5, 1, 2, 5% at
25 and 100 ms one way, 5 Mbit/s, 1000-packet queue; and the cellular-steady
trace), one at a time through netem's kernel mode. Needs Linux, root and
/dev/net/tun; about (cells x seconds) of wall time, 44 x 10 s and 11 media sessions of 10 s by default.
A QUIC (quic-go, NewReno) bulk row runs beside the TCP controllers; then
media sessions with the ABR on top (-media) run the lab's pipeline across
the kernel mode on N11's link and the trace, and beside a competing long
TCP flow. Writes tables, plots and report.md/report.html, and states
N11's verdict.

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
	g.Seconds, g.Seed, g.QUIC = *seconds, *seed, *quic
	var err error
	if g.Controllers, err = ccgrid.ParseControllers(*ccs); err != nil {
		return ccgridOptions{}, err
	}
	if *n11Only {
		g.N11Only()
	}
	if *media {
		g.Media.Seconds = *mediaSeconds
		g.Media.Controllers, g.Media.Competing = g.Controllers, g.Controllers
	} else {
		g.Media = nil
	}
	if err := g.Validate(); err != nil {
		return ccgridOptions{}, err
	}
	if *merge != "" && *from != "" {
		return ccgridOptions{}, errors.New("ccgrid: -merge goes with a run, not with -from")
	}
	return ccgridOptions{grid: g, out: *dir, from: *from, merge: *merge}, nil
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
		var earlier *ccgrid.Report
		if opt.merge != "" {
			// Read before the run: a bad file should not cost minutes.
			if earlier, err = ccgrid.ReadReport(opt.merge); err != nil {
				return err
			}
		}
		if err := ccgrid.Check(opt.grid); err != nil {
			return fmt.Errorf("ccgrid: %w (the grid needs kernel mode: run as root on Linux with /dev/net/tun)", err)
		}
		root, err := moduleRoot()
		if err != nil {
			return fmt.Errorf("ccgrid: the cellular column reads %s from the checkout, and the working directory is not inside it", ccgrid.CellularDown)
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		est := time.Duration(opt.grid.Cells()) * opt.grid.Duration()
		sessions := 0
		if m := opt.grid.Media; m != nil {
			sessions = m.Sessions()
			est += time.Duration(sessions) * (m.Duration() + lab.HandshakeLead)
		}
		fmt.Fprintf(stderr, "ccgrid: %d cells of %g s and %d media sessions, about %s\n", opt.grid.Cells(), opt.grid.Seconds,
			sessions, est.Round(time.Second))
		var runErr error
		rep, runErr = ccgrid.Run(ctx, opt.grid, root, stderr)
		if rep == nil {
			return runErr
		}
		if earlier != nil {
			if err := rep.Merge(earlier); err != nil {
				return errors.Join(runErr, err)
			}
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
		fmt.Fprintf(stdout, "%s\n\n", n.Sentence(rep.Grid.Rows()))
	}
	fmt.Fprint(stdout, render.Markdown(&render.Doc{Sections: []render.Section{{Tables: append(rep.Tables(), rep.MediaTables()...)}}}))
	base := filepath.Join(opt.out, ccgrid.ReportBase)
	fmt.Fprintf(stdout, "\n%d cells and %d media sessions in %s wall; report: %s.md, %s.html\n", len(rep.Cells), len(rep.Media),
		time.Duration(rep.WallSeconds*float64(time.Second)).Round(time.Second), base, base)
	return nil
}
