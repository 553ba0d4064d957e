package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/lab/metrics"
	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/scenarios"
)

// The monitor feeds the metrics at every tick and rewrites the status line
// every fourth (a second), with the rates of that second, cut to the
// terminal's width; clear removes the line it left.
func TestShellMonitor(t *testing.T) {
	var up, down netem.Stats
	stats := func() (netem.Stats, netem.Stats) { return up, down }
	reg := prometheus.NewRegistry()
	m, err := metrics.NewLinks(reg, prometheus.Labels{"scenario": "s"})
	require.NoError(t, err)
	var status bytes.Buffer
	width := 0
	start := time.Unix(1000, 0)
	phases := shellPhases{down: []scenarios.Phase{{At: 2 * time.Second, Rate: 1_000_000}}}
	mo := newShellMonitor(stats, start.Add(-5*time.Second), phases, m, &status, func() int { return width }, start)

	for k := 1; k <= 3; k++ {
		down.Delivered.Bytes += 125_000 // 1 Mbit each tick
		mo.tick(start.Add(time.Duration(k) * shellTick))
	}
	require.Empty(t, status.String(), "no status line before a second has passed")
	require.Equal(t, 375_000.0, deliveredDown(t, reg), "every tick's sample fed to the metrics")

	down.Delivered.Bytes += 125_000
	mo.tick(start.Add(4 * shellTick))
	require.Equal(t, "\r\033[Klab shell 6s: up 0.00 Mbit/s, 0 dropped; down 4.00 Mbit/s, 0 dropped; phase up perfect; down 1/1 rate 1 Mbit/s", status.String())
	require.Equal(t, 500_000.0, deliveredDown(t, reg))

	status.Reset()
	width = 20
	for k := 5; k <= 8; k++ {
		mo.tick(start.Add(time.Duration(k) * shellTick))
	}
	require.Equal(t, "\r\033[Klab shell 7s: up 0.", status.String(), "the second's rates (nothing crossed), cut to the width read now, less the cursor's column")

	status.Reset()
	mo.clear()
	require.Equal(t, "\r\033[K", status.String())
	mo.clear()
	require.Equal(t, "\r\033[K", status.String(), "cleared once")
}

// Without a status line (not a terminal, or no CMD) and without metrics,
// the monitor writes nothing.
func TestShellMonitorQuiet(t *testing.T) {
	stats := func() (netem.Stats, netem.Stats) { return netem.Stats{}, netem.Stats{} }
	mo := newShellMonitor(stats, time.Unix(0, 0), shellPhases{}, nil, nil, func() int { return 0 }, time.Unix(0, 0))
	for k := 1; k <= 8; k++ {
		mo.tick(time.Unix(0, 0).Add(time.Duration(k) * shellTick))
	}
	mo.clear() // nothing shown, nothing to clear (a nil writer would panic)
}

// deliveredDown is the down link's delivered bytes in reg.
func deliveredDown(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != metrics.LinkDeliveredBytes {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "direction" && l.GetValue() == metrics.Down {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s of the down link", metrics.LinkDeliveredBytes)
	return 0
}
