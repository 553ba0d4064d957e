package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/nuvirahub/latencylab/agent/codec/bench"
)

// codecs runs the codec benchmark (E9, E13): every case of the matrix
// through every codec, a progress line per case, then the table.
func codecs(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("codecs", flag.ContinueOnError)
	fs.SetOutput(out)
	iters := fs.Int("iters", 200, "timed encodes per case and codec (E9: 200)")
	warmup := fs.Int("warmup", 20, "encodes run first and not counted (E9: 20)")
	file := fs.String("o", "", "also write the table (Markdown) to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *iters < 1 || *warmup < 0 || fs.NArg() > 0 {
		return fmt.Errorf("codecs: -iters must be at least 1 and -warmup not negative, no arguments")
	}
	cases, cds := bench.Cases(), bench.Codecs()
	var results []bench.Result
	start := time.Now()
	for i, c := range cases {
		for _, cd := range cds {
			r, err := bench.Run(c, cd, *warmup, *iters)
			if err != nil {
				return err
			}
			results = append(results, r)
		}
		fmt.Fprintf(os.Stderr, "[%2d/%d] %-24s done (%.0f s so far)\n", i+1, len(cases), c.Name, time.Since(start).Seconds())
	}
	table := bench.Table(cases, cds, results)
	fmt.Fprintf(out, "\n%d timed encodes per case after %d warm-up ones; median; the dirty-tile detector is inside every codec's time.\n\n%s", *iters, *warmup, table)
	if *file != "" {
		return os.WriteFile(*file, []byte(table), 0o644)
	}
	return nil
}
