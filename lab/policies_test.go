package lab

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nuvirahub/latencylab/agent/encoder/openh264/openh264test"
	"github.com/nuvirahub/latencylab/internal/docregion"
	"github.com/nuvirahub/latencylab/lab/measure"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/reports/plots"
	"github.com/nuvirahub/latencylab/scenarios"
	"github.com/nuvirahub/latencylab/viewer"
)

var (
	policiesDoc   = flag.Bool("policies-doc", false, "run the lossy, mobile, cellular and rmcat groups (and the real encoder's twins) under every viewer policy and rewrite docs/policies.md's tables and plots")
	policiesSeeds = flag.Int("policies-seeds", 2, "with -policies-doc: seeds per scenario and policy, from the scenario's own")
)

// policyGroups are the library's groups whose verdicts rest on what the
// viewer does with a frame held back: losses, spikes, cellular links and
// RFC 8867's cases.
var policyGroups = []string{"lossy", "mobile", "cellular", "rmcat"}

// policyTwins are the real encoder's twins with frames held back, run
// under each policy the real encoder can take (it has no rolling refresh).
var policyTwins = []string{"real-abr-lossy", "real-mobile-spikes", "real-abr-capacity-drop"}

// policyRun is one run's figures, over the session from 1 s.
type policyRun struct {
	scenario string
	policy   string
	seed     uint64
	median   time.Duration
	p95      time.Duration
	fps      float64
	damaged  float64 // share of the time with a damaged picture on screen
	freezes  float64 // per minute
	repairs  float64 // keyframes and refreshes asked for, per minute
	err      error
}

func measurePolicyRun(r *result.Run) (policyRun, error) {
	var pr policyRun
	from := time.Second
	length := (r.Ran - from).Minutes()
	get := func(name string) float64 {
		v, err := measure.Of(r, name, from, 0)
		if err != nil && pr.err == nil {
			pr.err = fmt.Errorf("%s: %w", name, err)
		}
		return v
	}
	pr.median = time.Duration(get("latency.median") * 1e9)
	pr.p95 = time.Duration(get("latency.p95") * 1e9)
	pr.fps = get("fps")
	pr.damaged = get("damaged.time") / (length * 60)
	pr.freezes = get("freezes") / length
	pr.repairs = (get("keyframes.asked") + get("refreshes.asked")) / length
	return pr, pr.err
}

// TestPolicies measures the viewer's policies (docs/policies.md): every
// scenario of the policy groups under each policy, at -policies-seeds
// seeds, and the real encoder's twins under the policies it can take. It
// measures rather than checks, so it runs only when asked:
//
//	make policies
func TestPolicies(t *testing.T) {
	if !*policiesDoc {
		t.Skip("measures the viewer's policies for docs/policies.md; run it with make policies")
	}
	root := filepath.Join("..")
	region := docregion.Policies
	if err := region.Check(root); err != nil {
		t.Fatal(err)
	}
	lib, err := scenarios.Library()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var runs []policyRun
	add := func(pr policyRun) {
		mu.Lock()
		defer mu.Unlock()
		runs = append(runs, pr)
		fmt.Fprintf(os.Stderr, "[%3d] %-32s %-8s seed %-4d median %6.1f ms, fps %4.1f, damaged %4.1f%%\n",
			len(runs), pr.scenario, pr.policy, pr.seed, float64(pr.median.Microseconds())/1e3, pr.fps, 100*pr.damaged)
	}
	t.Run("model", func(t *testing.T) {
		for _, base := range lib {
			if !slices.ContainsFunc(policyGroups, func(g string) bool { return slices.Contains(base.Groups, g) }) {
				continue
			}
			for _, p := range viewer.Policies {
				for i := range *policiesSeeds {
					sc := *base
					sc.Seed, sc.Viewer.Policy = base.Seed+uint64(i), string(p)
					t.Run(fmt.Sprintf("%s/%s/seed%d", sc.Name, p, sc.Seed), func(t *testing.T) {
						t.Parallel()
						if err := sc.Validate(); err != nil {
							t.Skipf("%s cannot run under %s: %v", sc.Name, p, err)
						}
						var r *result.Run
						synctest.Test(t, func(t *testing.T) { r, err = Run(t.Context(), &sc) })
						if errors.Is(err, ErrSharedAbsent) {
							t.Skip(err)
						}
						if err != nil {
							t.Fatal(err)
						}
						pr, err := measurePolicyRun(r)
						if err != nil {
							t.Fatal(err)
						}
						pr.scenario, pr.policy, pr.seed = sc.Name, string(p), sc.Seed
						add(pr)
					})
				}
			}
		}
	})
	t.Run("real", func(t *testing.T) {
		openh264test.Require(t)
		for _, name := range policyTwins {
			for _, p := range viewer.Policies {
				if p == viewer.PolicyRefresh {
					continue
				}
				for i := range *policiesSeeds {
					t.Run(fmt.Sprintf("%s/%s/seed%d", name, p, i+1), func(t *testing.T) {
						t.Parallel()
						sc := realScenario(t, name)
						sc.Seed, sc.Viewer.Policy = uint64(i+1), string(p)
						pr, err := measurePolicyRun(runRealOnce(t, sc))
						if err != nil {
							t.Fatal(err)
						}
						pr.scenario, pr.policy, pr.seed = name, string(p), sc.Seed
						add(pr)
					})
				}
			}
		}
	})
	if t.Failed() {
		return
	}
	groupOf := map[string][]string{}
	for _, sc := range lib {
		groupOf[sc.Name] = sc.Groups
	}
	for _, name := range policyTwins {
		groupOf[name] = []string{"real"}
	}
	text, err := writePolicies(root, runs, groupOf)
	if err != nil {
		t.Fatal(err)
	}
	if err := region.Write(root, text); err != nil {
		t.Fatal(err)
	}
}

// writePolicies draws each group's plot into docs/policies/ and returns
// the generated region: a table per group, each policy's figures the
// median over its runs.
func writePolicies(root string, runs []policyRun, groupOf map[string][]string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured %s by `make policies` (%d runs; %d seeds per scenario and policy, the scenario's own first; %s). Each figure is the median over the group's runs of the run's own figure, over the session from 1 s: latency median and p95, frames shown a second, the share of the time a damaged picture was on the screen, freezes and repairs asked for (keyframes and refreshes) a minute.\n\n",
		time.Now().UTC().Format("2006-01-02"), len(runs), *policiesSeeds, machine())
	for _, g := range append(slices.Clone(policyGroups), "real") {
		var sets []plots.Set
		var rows []string
		for _, p := range viewer.Policies {
			var in []policyRun
			scen := map[string]bool{}
			for _, r := range runs {
				if r.policy == string(p) && slices.Contains(groupOf[r.scenario], g) {
					in = append(in, r)
					scen[r.scenario] = true
				}
			}
			if len(in) == 0 {
				continue
			}
			med := func(f func(policyRun) float64) float64 {
				vs := make([]float64, len(in))
				for i, r := range in {
					vs[i] = f(r)
				}
				slices.Sort(vs)
				return vs[len(vs)/2]
			}
			rows = append(rows, fmt.Sprintf("| %s | %d (%d scenarios) | %.1f ms | %.0f ms | %.1f | %.1f%% | %.1f | %.1f |",
				p, len(in), len(scen),
				med(func(r policyRun) float64 { return float64(r.median.Microseconds()) / 1e3 }),
				med(func(r policyRun) float64 { return float64(r.p95.Microseconds()) / 1e3 }),
				med(func(r policyRun) float64 { return r.fps }),
				100*med(func(r policyRun) float64 { return r.damaged }),
				med(func(r policyRun) float64 { return r.freezes }),
				med(func(r policyRun) float64 { return r.repairs })))
			set := plots.Set{Name: string(p)}
			for _, r := range in {
				set.Points = append(set.Points, plots.Point{X: 100 * r.damaged, Y: float64(r.median.Microseconds()) / 1e3})
			}
			sets = append(sets, set)
		}
		if len(rows) == 0 {
			fmt.Fprintf(&b, "### %s\n\nNo run (the group's scenarios were skipped).\n\n", g)
			continue
		}
		title := "group " + g
		if g == "real" {
			title = "the real encoder's twins (OpenH264)"
		}
		img, err := plots.Scatter(title+": each run", "damaged picture on screen (% of the time)", "latency median (ms)", sets)
		if err != nil {
			return "", err
		}
		file := filepath.Join("docs", "policies", g+".png")
		if err := os.MkdirAll(filepath.Join(root, "docs", "policies"), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(root, file), img, 0o644); err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "### %s\n\n| policy | runs | latency median | p95 | fps | damaged | freezes/min | repairs/min |\n|---|---|---|---|---|---|---|---|\n%s\n\n![%s](policies/%s.png)\n\n",
			title, strings.Join(rows, "\n"), title, g)
	}
	return b.String(), nil
}
