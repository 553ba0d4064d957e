package main

import (
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nuvirahub/latencylab/lab/metrics"
)

// serveMetrics serves reg's metrics on http://addr/metrics (lab run's and
// lab shell's -metrics) and returns the address it listens on (addr may
// name port 0) and the function that stops it.
func serveMetrics(addr string, reg *prometheus.Registry) (string, func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("-metrics %s: %w (another run may be serving there: pick another port, or 127.0.0.1:0 for any)", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", metrics.Handler(reg))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go hs.Serve(ln)
	return ln.Addr().String(), func() { hs.Close() }, nil
}
