package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"time"

	"github.com/nuvirahub/latencylab/agent/codec/bench"
	"github.com/nuvirahub/latencylab/agent/screen/recording"
	"github.com/nuvirahub/latencylab/internal/docregion"
)

// codecs runs the codec benchmark (E9, E13): every case of the matrix
// through every codec, a progress line per case, then the reproduction rows
// and the table; the report folder gets the JSON, the Markdown and plots.
func codecs(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("codecs", flag.ContinueOnError)
	fs.SetOutput(out)
	iters := fs.Int("iters", 200, "timed encodes per case and codec (E9: 200)")
	warmup := fs.Int("warmup", 20, "encodes run first and not counted (E9: 20)")
	dir := fs.String("out", "out/codecs", "report folder: codecs.json, codecs.md and the plots")
	match := fs.String("run", "", "only the cases whose name matches this regular expression")
	codecMatch := fs.String("codecs", "", "only the codecs whose name matches this regular expression (tile, tile-carry, hextile, zrle, "+bench.TilePerTile+")")
	from := fs.String("from", "", "render the report from this codecs.json instead of running")
	doc := fs.String("doc", "", "also rewrite the codec rows between the codec markers of this file (docs/codecs.md)")
	recordings := fs.String("recordings", "", "run the codecs on the recorded desktops (*.labrec) of this folder instead of the synthetic matrix (testdata/recordings), into -out's recorded.md")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *recordings != "" {
		if *iters < 1 || *warmup < 0 || fs.NArg() > 0 || *from != "" || *doc != "" || *match != "" {
			return fmt.Errorf("codecs: -recordings takes -iters (at least 1), -warmup, -codecs and -out, no arguments")
		}
		return codecsOnRecordings(*recordings, *dir, *codecMatch, *warmup, *iters, out)
	}
	if *iters < 1 || *warmup < 0 || fs.NArg() > 0 {
		return fmt.Errorf("codecs: -iters must be at least 1 and -warmup not negative, no arguments")
	}
	// The full run takes a quarter of an hour: a file without its markers
	// fails now, not at the end.
	region := docregion.Region{File: *doc, Begin: docregion.Codecs.Begin, End: docregion.Codecs.End}
	if *doc != "" {
		if err := region.Check(""); err != nil {
			return fmt.Errorf("codecs: -doc: %w", err)
		}
	}
	var rep *bench.Report
	var err error
	if *from != "" {
		rep, err = bench.ReadReport(*from)
	} else {
		rep, err = runCodecs(*iters, *warmup, *match, *codecMatch)
	}
	if err != nil {
		return err
	}
	if err := bench.WriteReport(*dir, rep); err != nil {
		return err
	}
	fmt.Fprintf(out, "\n%s\nReport: %s/%s (plots beside it)\n", bench.RowsTable(rep.Rows), *dir, bench.ReportMarkdown)
	if *doc != "" {
		return rewriteCodecTable(region, rep)
	}
	return nil
}

// runCodecs runs the matrix, printing progress with an estimate of what is
// left (the full run takes about half an hour on 2 cores).
func runCodecs(iters, warmup int, match, codecMatch string) (*bench.Report, error) {
	re, err := regexp.Compile(match)
	if err != nil {
		return nil, fmt.Errorf("codecs: -run: %w", err)
	}
	codecRE, err := regexp.Compile(codecMatch)
	if err != nil {
		return nil, fmt.Errorf("codecs: -codecs: %w", err)
	}
	rep := &bench.Report{
		Schema: bench.ReportSchema, Iters: iters, Warmup: warmup, Started: time.Now(),
		Machine: fmt.Sprintf("%s/%s, %d CPUs, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version()),
	}
	for _, c := range bench.Cases() {
		if re.MatchString(c.Name) {
			rep.Cases = append(rep.Cases, c)
		}
	}
	if len(rep.Cases) == 0 {
		return nil, fmt.Errorf("codecs: no case matches %q", match)
	}
	cds := bench.SelectCodecs(codecRE)
	if len(cds) == 0 {
		return nil, fmt.Errorf("codecs: no codec matches %q", codecMatch)
	}
	for _, cd := range cds {
		rep.Codecs = append(rep.Codecs, cd.Name)
	}
	start := time.Now()
	for i, c := range rep.Cases {
		rs, err := bench.RunCase(c, cds, warmup, iters)
		if err != nil {
			return nil, err
		}
		rep.Results = append(rep.Results, rs...)
		if !c.Key {
			rep.Detector = append(rep.Detector, bench.RunDetector(c, warmup, iters))
		}
		done := time.Since(start)
		left := time.Duration(float64(done) / float64(i+1) * float64(len(rep.Cases)-i-1))
		fmt.Fprintf(os.Stderr, "[%2d/%d] %-22s %4.0f s so far, about %s left\n", i+1, len(rep.Cases), c.Name, done.Seconds(), left.Round(time.Second))
	}
	rep.Wall = time.Since(start)
	rep.Rows = bench.Reproduce(rep.Results, rep.Detector)
	return rep, nil
}

// rewriteCodecTable puts the run's reproduction rows, with the command
// that measured them, between the codec markers of the region's file.
func rewriteCodecTable(region docregion.Region, rep *bench.Report) error {
	cmd := fmt.Sprintf("`go run ./cmd/lab codecs -iters %d -warmup %d`", rep.Iters, rep.Warmup)
	table := fmt.Sprintf("Measured %s on %s (%s wall), %s:\n\n%s",
		rep.Started.UTC().Format("2006-01-02"), rep.Machine, rep.Wall.Round(time.Second), cmd, bench.RowsTable(rep.Rows))
	return region.Write("", table)
}

// codecsOnRecordings runs the codecs on every recording of dir, a progress
// line per recording, and writes the table into outDir's recorded.md.
func codecsOnRecordings(dir, outDir, codecMatch string, warmup, iters int, out io.Writer) error {
	codecRE, err := regexp.Compile(codecMatch)
	if err != nil {
		return fmt.Errorf("codecs: -codecs: %w", err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.labrec"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("codecs: -recordings %s: no recordings (*.labrec) there", dir)
	}
	var recs []*recording.Recording
	for _, f := range files {
		rec, err := recording.Open(f)
		if err != nil {
			return fmt.Errorf("codecs: %w", err)
		}
		recs = append(recs, rec)
	}
	cds := bench.SelectCodecs(codecRE)
	began := time.Now()
	rs, err := bench.RunRecorded(recs, cds, warmup, iters, out)
	if err != nil {
		return err
	}
	table := bench.RecordedTable(rs, cds)
	md := fmt.Sprintf("# The codecs on recorded desktops\n\nMeasured %s on %s/%s, %d CPUs, %s (%v wall), `lab codecs -recordings %s -iters %d -warmup %d`: "+
		"each recording's first and middle frames as keyframes (bytes: the first's; times: their median) and up to %d of its changes (bytes and times: their medians); a time is the median of %d encodes, dirty-tile detection included.\n\n%s",
		began.Format(time.DateOnly), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), time.Since(began).Round(time.Second),
		dir, iters, warmup, bench.PairsPerRecording, iters, table)
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(outDir, "recorded.md")
	if err := os.WriteFile(path, []byte(md), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(out, "\n%s\nReport: %s\n", table, path)
	return nil
}
