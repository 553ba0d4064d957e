package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/reports/plots"
	"github.com/nuvirahub/latencylab/reports/render"
)

// report renders result files (make suite's folder, or any of its JSON
// files) as one document: a summary table and a latency CDF of every
// scenario, then per scenario its checks, latency and bitrate over time
// and where a frame's time goes. Nothing is run: a report of yesterday's
// results reads the same today.
func report(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(out)
	dir := fs.String("out", "out/report", "report folder: report.md, report.html and the plots")
	fs.Usage = func() {
		fmt.Fprintln(out, "usage: lab report [-out DIR] RESULT.json|FOLDER...")
		fmt.Fprintln(out, "\nRenders lab results (schema "+result.Version+", as make suite writes them) as report.md and report.html.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("report: name result files or folders of them (make suite writes out/results)")
	}
	files, err := resultFiles(fs.Args())
	if err != nil {
		return err
	}
	// Read on every core: a quarter of a report's time is decoding JSON.
	entries := make([]reportEntry, len(files))
	if err := onEveryCore(len(files), func(i int) error {
		r, err := result.Read(files[i])
		entries[i] = reportEntry{file: files[i], result: r}
		return err
	}); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	label(entries)
	doc, err := reportDoc(entries, "Rendered by `lab report` from "+strings.Join(quoteAll(fs.Args()), ", ")+".")
	if err != nil {
		return err
	}
	if err := render.Write(*dir, "report", doc); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	fmt.Fprintf(out, "Report: %s (and report.md, plots beside it), %d results\n", filepath.Join(*dir, "report.html"), len(entries))
	return nil
}

// reportEntry is one result file and the name the report gives it.
type reportEntry struct {
	file   string
	result *result.Run
	label  string // the scenario, or scenario (file) when two share it
	slug   string // the label as a file name, unique
}

// resultFiles expands folders into their JSON files, in name order, and
// keeps named files as given; a folder without any is an error, since a
// report of nothing is most likely a wrong path.
func resultFiles(args []string) ([]string, error) {
	var files []string
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
		if !st.IsDir() {
			files = append(files, a)
			continue
		}
		found, err := filepath.Glob(filepath.Join(a, "*.json"))
		if err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("report: %s: no .json result in this folder", a)
		}
		slices.Sort(found)
		files = append(files, found...)
	}
	return files, nil
}

// label names each entry by its scenario; runs of one scenario from
// several files (seeds, variants) are told apart by their file.
func label(entries []reportEntry) {
	count := map[string]int{}
	withEncoder := map[[2]string]int{}
	for _, e := range entries {
		count[e.result.Scenario]++
		withEncoder[[2]string{e.result.Scenario, e.result.Encoder}]++
	}
	slugs := map[string]bool{}
	for i := range entries {
		e := &entries[i]
		e.label = e.result.Scenario
		if e.label == "" {
			e.label = strings.TrimSuffix(filepath.Base(e.file), ".json")
		} else if count[e.label] > 1 {
			// Runs of one scenario by different encoders (lab vnc's
			// servers and encodings) are told apart by the encoder, others
			// by their file.
			if enc := e.result.Encoder; enc != "" && withEncoder[[2]string{e.label, enc}] == 1 {
				e.label += " (" + enc + ")"
			} else {
				e.label += " (" + filepath.Base(e.file) + ")"
			}
		}
		base := slug(e.label)
		e.slug = base
		for n := 2; slugs[e.slug]; n++ {
			e.slug = fmt.Sprintf("%s-%d", base, n)
		}
		slugs[e.slug] = true
	}
}

// slug keeps letters, digits, dots and dashes, so a label makes a file
// name that needs no quoting anywhere.
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '_'
		if !ok {
			if !dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = true
			continue
		}
		b.WriteRune(r)
		dash = false
	}
	out := strings.Trim(b.String(), "-.")
	if out == "" {
		return "result"
	}
	return out
}

// reportDoc builds the document: the summary first, a section per result
// in the order given. origin says where the results came from.
func reportDoc(entries []reportEntry, origin string) (*render.Doc, error) {
	passed := 0
	for _, e := range entries {
		if e.result.Passed() {
			passed++
		}
	}
	doc := &render.Doc{
		Title: "Latency lab report",
		Intro: []string{
			fmt.Sprintf("%d results: %d passed every check, %d failed at least one.", len(entries), passed, len(entries)-passed),
			origin + " Latencies are true capture-to-display times of the frames displayed.",
		},
	}
	summary := render.Section{Heading: "Summary", Tables: []render.Table{summaryTable(entries)}}
	var series []plots.Series
	for _, e := range entries {
		var v []float64
		for _, f := range e.result.Frames {
			if f.WasDisplayed() {
				v = append(v, f.Latency.Seconds())
			}
		}
		series = append(series, plots.Series{Label: e.label, Values: v})
	}
	cdf, err := plots.LatencyCDF("Latency of every scenario", series)
	if err != nil {
		return nil, fmt.Errorf("report: latency CDF: %w", err)
	}
	summary.Figures = append(summary.Figures, render.Figure{
		Name: "latency-cdf.png", PNG: cdf,
		Caption: "Cumulative distribution of each scenario's latency over its displayed frames; dotted lines at the median and the 95th percentile.",
	})
	doc.Sections = append(doc.Sections, summary)
	sections, err := scenarioSections(entries)
	if err != nil {
		return nil, err
	}
	doc.Sections = append(doc.Sections, sections...)
	return doc, nil
}

// scenarioSections draws each entry's section, on every core: the plots
// (PNG encoding most of all) are two thirds of a report's time, 3.9 s of
// 5.4 for the library's 49 results on one core. The sections keep the
// entries' order.
func scenarioSections(entries []reportEntry) ([]render.Section, error) {
	sections := make([]render.Section, len(entries))
	err := onEveryCore(len(entries), func(i int) (err error) {
		sections[i], err = scenarioSection(entries[i])
		return err
	})
	return sections, err
}

// onEveryCore calls do(0) to do(n-1), as many at once as there are cores,
// and returns the error of the lowest i that failed, so that a run's
// error does not depend on which core came first.
func onEveryCore(n int, do func(i int) error) error {
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Go(func() {
			for i := range next {
				errs[i] = do(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = "`" + s + "`"
	}
	return out
}

// summaryTable has a row per result: the figures a reader scans first.
func summaryTable(entries []reportEntry) render.Table {
	t := render.Table{
		Caption: "Summary: true latency of displayed frames, frames displayed per second, freezes (the display standing still over the freeze threshold while the screen had changed) and the scenario's checks",
		Header:  []string{"scenario", "median latency (ms)", "p95 latency (ms)", "fps", "freezes", "freeze.longest (ms)", "checks"},
	}
	for _, e := range entries {
		s := e.result.Summary
		t.Rows = append(t.Rows, []string{
			e.label, millis(s.Latency.Median), millis(s.Latency.P95), fmt.Sprintf("%.1f", s.FPS),
			fmt.Sprint(len(s.Freezes)), millis(s.FreezeLongest), checksCell(e.result),
		})
	}
	return t
}

func millis(d time.Duration) string { return fmt.Sprintf("%.1f", d.Seconds()*1e3) }

// checksCell says how many checks passed; a failure is strong, so it
// stands out in a long table.
func checksCell(r *result.Run) string {
	pass := 0
	for _, c := range r.Checks {
		if c.Pass {
			pass++
		}
	}
	switch {
	case len(r.Checks) == 0:
		return "none"
	case pass == len(r.Checks):
		return fmt.Sprintf("%d/%d pass", pass, len(r.Checks))
	default:
		return fmt.Sprintf("**%d/%d FAIL**", len(r.Checks)-pass, len(r.Checks))
	}
}

// scenarioSection is one result: what it is, its checks and its plots.
func scenarioSection(e reportEntry) (render.Section, error) {
	r := e.result
	s := render.Section{Heading: e.label}
	if r.Description != "" {
		s.Paragraphs = append(s.Paragraphs, r.Description)
	}
	enc := r.Encoder
	if r.FrameSizes != "" {
		enc += " (" + r.FrameSizes + " frame sizes)"
	}
	facts := fmt.Sprintf("From `%s`: scenario file `%s`, seed %d, ran %v of %v, encoder %s.", e.file, r.File, r.Seed, r.Ran, r.Duration, enc)
	if r.Interrupted != "" {
		facts += " **Interrupted:** " + r.Interrupted + "."
	}
	s.Paragraphs = append(s.Paragraphs, facts)
	if len(r.Network.Down) > 0 {
		var phases []string
		for _, ph := range r.Network.Down {
			phases = append(phases, fmt.Sprintf("from %v: %s", ph.At, ph.Description))
		}
		s.Paragraphs = append(s.Paragraphs, "Downlink: "+strings.Join(phases, "; ")+".")
	}
	if len(r.Checks) > 0 {
		t := render.Table{Caption: "Checks", Header: []string{"check", "result"}}
		for _, c := range r.Checks {
			// The result has its own column, where a failure stands out,
			// with what kind of bound failed after it.
			result := "pass"
			check := c.Subject()
			switch {
			case !c.Pass:
				result = "**FAIL**" + strings.TrimPrefix(c.Verdict(), "FAIL")
			case c.Verdict() != "pass":
				check += ": " + c.Verdict() // an expected failure, or not judged
			}
			t.Rows = append(t.Rows, []string{check, result})
		}
		s.Tables = append(s.Tables, t)
	}
	if len(r.Traffic) > 0 {
		s.Tables = append(s.Tables, flowsTable(r))
		if r.Summary.Fairness != nil {
			s.Paragraphs = append(s.Paragraphs, fmt.Sprintf("Jain's fairness index over the media sessions on the downlink (`fairness.jain`, the whole run): %.3f (1 when they share equally, 1/n when one takes everything).", *r.Summary.Fairness))
		}
	}
	one := map[string]*result.Run{e.label: r}
	over, err := plots.LatencyOverTime(e.label, one)
	if err != nil {
		return s, fmt.Errorf("report: %s: %w", e.file, err)
	}
	stages, err := plots.StageBreakdown(e.label+": where a frame's time goes", one)
	if err != nil {
		return s, fmt.Errorf("report: %s: %w", e.file, err)
	}
	stagesOver, err := plots.StagesOverTime(e.label+": where a frame's time goes, over time", r)
	if err != nil {
		return s, fmt.Errorf("report: %s: %w", e.file, err)
	}
	s.Figures = append(s.Figures,
		render.Figure{Name: e.slug + "-latency.png", PNG: over,
			Caption: fmt.Sprintf("%s: median latency per %v bucket (above); downlink capacity, target bitrate and video sent (below); dotted lines at the downlink's phase changes.", e.label, r.SampleEvery)},
		render.Figure{Name: e.slug + "-stages.png", PNG: stages,
			Caption: fmt.Sprintf("%s: median of each stage over the displayed frames (capture to end of encode, to sent, to arrived, to displayed); the dot is the median latency.", e.label)},
		render.Figure{Name: e.slug + "-stages-time.png", PNG: stagesOver,
			Caption: fmt.Sprintf("%s: the same stages per %v bucket of display, stacked, over the session; the line is the median latency. A band that grows is a backlog: waiting to send in front of the network (the send cap), network at the bottleneck.", e.label, r.SampleEvery)},
	)
	if len(r.Traffic) > 0 {
		flows, err := plots.FlowsOverTime(e.label+": the flows", r)
		if err != nil {
			return s, fmt.Errorf("report: %s: %w", e.file, err)
		}
		s.Figures = append(s.Figures, render.Figure{Name: e.slug + "-flows.png", PNG: flows,
			Caption: fmt.Sprintf("%s: each flow's throughput per %v over the capacity of the link its data crosses (the session's video by arrival); the downlink's flows above, the uplink's below when a flow goes up.", e.label, plots.FlowPeriod(r))})
	}
	return s, nil
}

// flowsTable has a row per flow of a result with traffic, the scenario's
// own session (main) first: what it is, when it ran and what it got, over
// the time it ran (the summary's figures).
func flowsTable(r *result.Run) render.Table {
	t := render.Table{
		Caption: "Flows: each over the time it ran; throughput is the payload its receiver got (a session's video), share that over the capacity of the link it crossed, latency a session's capture to display",
		Header:  []string{"flow", "kind", "direction", "start", "stop", "throughput (Mbit/s)", "share", "median latency (ms)", "p95 latency (ms)"},
	}
	sums := map[string]result.FlowSummary{}
	for _, fs := range r.Summary.Flows {
		sums[fs.Name] = fs
	}
	type row struct {
		name, kind, dir, desc string
		start, stop           time.Duration
		err                   string
	}
	rows := []row{{name: "main", kind: "the session", dir: "down", stop: r.Ran}}
	for _, f := range r.Traffic {
		rows = append(rows, row{name: f.Name, kind: f.Kind, dir: f.Direction, desc: f.Description, start: f.Start, stop: min(f.Stop, r.Ran), err: f.Error})
	}
	for _, rw := range rows {
		kind := rw.kind
		if rw.desc != "" {
			kind += ", " + rw.desc
		}
		if rw.err != "" {
			kind += " (**error:** " + rw.err + ")"
		}
		cells := []string{"`" + rw.name + "`", kind, rw.dir, rw.start.String(), rw.stop.String(), "-", "-", "-", "-"}
		if fs, ok := sums[rw.name]; ok {
			cells[5] = fmt.Sprintf("%.2f", fs.ThroughputBps/1e6)
			if fs.Share != nil {
				cells[6] = fmt.Sprintf("%.1f%%", 100**fs.Share)
			}
			if fs.Latency != nil {
				cells[7], cells[8] = millis(fs.Latency.Median), millis(fs.Latency.P95)
			}
		}
		t.Rows = append(t.Rows, cells)
	}
	return t
}
