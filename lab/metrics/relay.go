package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/nuvirahub/latencylab/netem/relay"
)

// The relay's metric names. They are read from the relay's own counters at
// each scrape, so an operator sees what it forwards and what it drops, by
// reason, without the relay knowing about Prometheus.
const (
	RelayForwardedDatagrams = "lab_relay_forwarded_datagrams_total"
	RelayForwardedBytes     = "lab_relay_forwarded_bytes_total"
	RelayDroppedDatagrams   = "lab_relay_dropped_datagrams_total"
	RelayBinds              = "lab_relay_binds_total"
)

// The relay's forwarding directions, the values of its direction label.
const (
	AgentToViewer = "agent-to-viewer"
	ViewerToAgent = "viewer-to-agent"
)

// relayCollector exports a relay's counters.
type relayCollector struct {
	stats                          func() relay.Stats
	datagrams, bytes, drops, binds *prometheus.Desc
}

// NewRelayCollector returns a collector of a relay's counters, read through
// stats (a Server's Stats method) at each scrape, each metric with the
// constant labels (nil for none). Register it on the registry the relay's
// /metrics serves.
func NewRelayCollector(stats func() relay.Stats, labels prometheus.Labels) prometheus.Collector {
	return &relayCollector{
		stats: stats,
		datagrams: prometheus.NewDesc(RelayForwardedDatagrams,
			"Datagrams the relay forwarded between a session's peers, by direction.", []string{"direction"}, labels),
		bytes: prometheus.NewDesc(RelayForwardedBytes,
			"Bytes the relay forwarded between a session's peers, by direction.", []string{"direction"}, labels),
		drops: prometheus.NewDesc(RelayDroppedDatagrams,
			"Datagrams the relay dropped, by reason: malformed, unbound (no session at that address), no-peer (the other role not bound), send (could not be sent on), refused (a bind for a session never registered).",
			[]string{"reason"}, labels),
		binds: prometheus.NewDesc(RelayBinds,
			"Bind messages the relay accepted, refreshes included; rebound: those that moved a role to a new address.", []string{"result"}, labels),
	}
}

// Describe implements prometheus.Collector.
func (c *relayCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.datagrams
	ch <- c.bytes
	ch <- c.drops
	ch <- c.binds
}

// Collect implements prometheus.Collector.
func (c *relayCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	counter := func(d *prometheus.Desc, v uint64, label string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), label)
	}
	counter(c.datagrams, s.AgentToViewer.Datagrams, AgentToViewer)
	counter(c.datagrams, s.ViewerToAgent.Datagrams, ViewerToAgent)
	counter(c.bytes, s.AgentToViewer.Bytes, AgentToViewer)
	counter(c.bytes, s.ViewerToAgent.Bytes, ViewerToAgent)
	drops := s.Drops()
	for _, r := range relay.DropReasons {
		counter(c.drops, drops[r], string(r))
	}
	counter(c.binds, s.Bound, "bound")
	counter(c.binds, s.Rebound, "rebound")
}
