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
	"strings"
	"syscall"
	"time"

	"github.com/nuvirahub/latencylab/agent/screen/recording"
	"github.com/nuvirahub/latencylab/lab/record"
)

const recordUsage = `usage: lab record -kind KIND -out FILE [flags]
       lab record -list
       lab record -manifest DIR
       lab record -upgrade FILE...

Records real desktop applications losslessly: starts an Xvfb display of
the given size (depth 24), openbox where the kind has windows, and the
kind's Debian applications (xterm, nano, Chromium, mpv, glmark2, xclock),
plays the kind's script of input on them with xdotool (typing, keys,
wheel clicks, window moves; everything it picks comes from -seed), and
samples the screen -rate times a second: the X DAMAGE extension says what
changed since the last tick, only that is read, and a frame is written
for each tick after which something changed, with its damage rectangles.
The file is the lab's screen recording (agent/screen/recording); its
metadata names the kind, the applications' package versions, the script
in words and this command line. -manifest writes DIR/manifest.yaml from
the recordings in DIR (testdata/recordings is the lab's corpus).
-upgrade rewrites recordings made in an older format in the current one,
in place: the same pixels, instants and damage, with what the older format
did not measure (the share of each change a shift of the frame before
explains) measured from the pixels.

Recording starts once the windows are up and the screen is still (a page
loaded). A line a second on standard error says how far it is. The
programs are stopped when it ends, on an error or a signal too. It needs:
  ` + record.InstallHint + `

flags:
`

// recordFlags are lab record's settings.
type recordFlags struct {
	kind, size, out string
	manifest        string
	duration        time.Duration
	rate            float64
	seed            uint64
	list, verbose   bool
	upgrade         bool
	files           []string
}

func parseRecord(args []string, out io.Writer) (recordFlags, error) {
	var f recordFlags
	fs := flag.NewFlagSet("record", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() { fmt.Fprint(out, recordUsage); fs.PrintDefaults() }
	names := make([]string, 0, len(record.Kinds()))
	for _, k := range record.Kinds() {
		names = append(names, k.Name)
	}
	fs.StringVar(&f.kind, "kind", "", "the content: "+strings.Join(names, ", ")+" (-list says what each shows)")
	fs.StringVar(&f.size, "size", fmt.Sprintf("%dx%d", record.DefaultWidth, record.DefaultHeight), "the X display's size, WIDTHxHEIGHT (1920x1080 too)")
	fs.DurationVar(&f.duration, "duration", record.DefaultDuration, "how long the screen is recorded")
	fs.Float64Var(&f.rate, "rate", record.DefaultRate, "how many times a second the damage is sampled, in Hz")
	fs.Uint64Var(&f.seed, "seed", record.DefaultSeed, "the seed of everything the kind picks: text, pauses, places")
	fs.StringVar(&f.out, "out", "", "the recording's file (KIND-720p.labrec, say)")
	fs.BoolVar(&f.list, "list", false, "list the kinds and exit")
	fs.StringVar(&f.manifest, "manifest", "", "write `DIR`/manifest.yaml from the recordings in DIR, and exit")
	fs.BoolVar(&f.verbose, "v", false, "show the programs' own output")
	fs.BoolVar(&f.upgrade, "upgrade", false, "rewrite the recordings named after the flags in the current format, in place, and exit")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if f.upgrade {
		if fs.NArg() == 0 {
			return f, errors.New("record: -upgrade needs the recordings' files after the flags")
		}
		f.files = fs.Args()
		return f, nil
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("record: unexpected arguments %q", fs.Args())
	}
	if f.list || f.manifest != "" {
		return f, nil
	}
	if f.kind == "" {
		return f, errors.New("record: -kind is required: one of " + strings.Join(names, ", "))
	}
	if f.out == "" {
		return f, errors.New("record: -out is required: the recording's file")
	}
	return f, nil
}

// recordMain is lab record from the command line: SIGINT, SIGTERM and
// SIGHUP end it early, everything it started stopped.
func recordMain(args []string, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	err := recordRun(ctx, args, stdout, stderr)
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("record: interrupted by a signal, everything it started stopped (%w)", err)
	}
	return err
}

func recordRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseRecord(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if f.list {
		for _, k := range record.Kinds() {
			fmt.Fprintf(stdout, "%-16s %s\n", k.Name, k.About)
		}
		return nil
	}
	if f.upgrade {
		for _, path := range f.files {
			u, err := recording.Upgrade(path)
			if err != nil {
				return fmt.Errorf("record: %w", err)
			}
			what := fmt.Sprintf("format %d -> %d", u.From, u.To)
			if u.From == u.To {
				what = fmt.Sprintf("format %d already, left alone", u.From)
			}
			fmt.Fprintf(stdout, "%s: %s; %d frames, %.1f%% of the changed pixels explained by a shift, %.0f%% of the damaged pixels changed\n",
				path, what, u.Frames, 100*u.Moved, 100*u.Fill)
		}
		return nil
	}
	if f.manifest != "" {
		m, err := record.WriteManifest(f.manifest)
		if err != nil {
			return fmt.Errorf("record: %w", err)
		}
		fmt.Fprintf(stdout, "%s: %d recordings, %.2f MB\n", filepath.Join(f.manifest, record.ManifestFile), len(m.Recordings), float64(m.TotalBytes)/1e6)
		return nil
	}
	var w, h int
	if _, err := fmt.Sscanf(f.size, "%dx%d", &w, &h); err != nil || w <= 0 || h <= 0 {
		return usagef("record: -size %q: WIDTHxHEIGHT, like 1280x720", f.size)
	}
	if _, err := record.Lookup(f.kind); err != nil {
		return usageError{err}
	}
	if err := record.Check(f.kind); err != nil {
		return err
	}
	if dir := filepath.Dir(f.out); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("record: %w", err)
		}
	}
	logw := io.Discard
	if f.verbose {
		logw = stderr
	}
	cfg := record.Config{Kind: f.kind, Width: w, Height: h, Duration: f.duration, Rate: f.rate, Seed: f.seed, Out: f.out, Progress: stderr, Log: logw}
	fmt.Fprintf(stderr, "lab record: %s at %dx%d for %v, %v Hz, seed %d\n", f.kind, w, h, f.duration, f.rate, f.seed)
	r, err := record.Record(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %s, %d frames in %v, %.2f MB (%s)\n", f.out, r.Meta.Kind, r.Frames, r.Duration.Round(time.Millisecond),
		float64(r.Bytes)/1e6, r.Meta.App)
	if r.Late > 0 {
		fmt.Fprintf(stdout, "%d ticks of %d came late (the machine was busy): their damage went into the next frame\n", r.Late, int(r.Duration.Seconds()*f.rate))
	}
	return nil
}
