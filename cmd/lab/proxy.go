package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"github.com/nuvirahub/latencylab/lab/plan"
	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/scenarios"
)

const proxyUsage = `usage: lab proxy -scenario NAME|FILE -target HOST:PORT [flags]

Runs the real-time impairment proxy for any program's UDP traffic, with a
scenario's network: datagrams sent to the proxy's address reach the target
through the scenario's up link (the viewer's side is the client), and the
target's replies come back through its down link, phases and all, counted
from the proxy's start. A status line every second shows what crossed each
way. An HTTP API (loopback unless told otherwise) changes the impairments
while it runs:

  GET  /status            both links' counters and the current impairments (JSON)
  PUT  /up, /down, /both  replace a direction's impairments with one phase,
                          written as in a scenario file, e.g.
                          curl -X PUT --data '{delay: 50ms, loss: 2%}' http://ADDR/down

Stops on Ctrl-C or after -duration.

flags:
`

// proxyFlags are lab proxy's settings.
type proxyFlags struct {
	scenario, target, listen, api string
	duration                      time.Duration
	ecn                           bool
}

func parseProxy(args []string, out io.Writer) (proxyFlags, error) {
	var f proxyFlags
	fs := flag.NewFlagSet("proxy", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() { fmt.Fprint(out, proxyUsage); fs.PrintDefaults() }
	fs.StringVar(&f.scenario, "scenario", "", "a scenario of the library by name, or a scenario file")
	fs.StringVar(&f.target, "target", "", "where the clients' datagrams go (host:port)")
	fs.StringVar(&f.listen, "listen", "127.0.0.1:0", "the address clients send to")
	fs.StringVar(&f.api, "api", "127.0.0.1:0", "the HTTP API's address (empty: no API)")
	fs.DurationVar(&f.duration, "duration", 0, "stop after this long (0: until Ctrl-C)")
	fs.BoolVar(&f.ecn, "ecn", false, "carry the ECN bits of what it relays, so that a program whose socket sets ECT (quic-go does) is ECN-capable across the links (on by itself when the scenario sets ecn); off, they leave Not-ECT")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	switch {
	case fs.NArg() > 0:
		return f, fmt.Errorf("proxy: unexpected argument %q", fs.Arg(0))
	case f.scenario == "":
		return f, errors.New("proxy: -scenario is required: a library name like mobile-spikes, or a .yaml file")
	case f.target == "":
		return f, errors.New("proxy: -target is required: the host:port the program's datagrams are for")
	case f.duration < 0:
		return f, fmt.Errorf("proxy: -duration %v: must not be negative", f.duration)
	}
	return f, nil
}

// loadScenario finds a scenario by library name or reads a file.
func loadScenario(name string) (*scenarios.Scenario, error) {
	if strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") {
		return scenarios.LoadFile(name)
	}
	lib, err := scenarios.Library()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, sc := range lib {
		if sc.Name == name {
			return sc, nil
		}
		names = append(names, sc.Name)
	}
	return nil, fmt.Errorf("no scenario %q in the library (a file must end in .yaml); the library has: %s", name, strings.Join(names, ", "))
}

// phaseImpairments reads one phase written as in a scenario file (the
// API's body) through the scenario loader (scenarios.ParsePhase), so that
// its mistakes are reported as the loader reports them. It builds the
// phase twice, once per direction: an impairment instance belongs to one
// link (a rate's queue, a loss model's state), so the two directions never
// share one.
func phaseImpairments(body []byte) (up, down []netem.Impairment, err error) {
	sc, err := scenarios.ParsePhase(body)
	if err != nil {
		return nil, nil, err
	}
	upLink, downLink, err := plan.Links(sc)
	if err != nil {
		return nil, nil, err
	}
	return upLink.Impairments, downLink.Impairments, nil
}

// maxPhaseBody bounds a PUT's body: a phase is a line or two of YAML.
const maxPhaseBody = 64 << 10

// The API's timeouts: a client that sends its headers or body slowly, or
// reads the answer slowly, is cut off rather than holding a connection. The
// write timeout runs from the end of the headers and the read timeout from
// the connection's start, so the write timeout is the longer: a body cut off
// by the read timeout can still be answered 408.
const (
	apiHeaderTimeout = 5 * time.Second
	apiReadTimeout   = 10 * time.Second
	apiWriteTimeout  = 15 * time.Second
	apiIdleTimeout   = time.Minute
)

// newAPIServer serves h with the API's timeouts and a 16 KB bound on the
// headers.
func newAPIServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: apiHeaderTimeout, ReadTimeout: apiReadTimeout,
		WriteTimeout: apiWriteTimeout, IdleTimeout: apiIdleTimeout, MaxHeaderBytes: 16 << 10}
}

// isTimeout reports whether err is a deadline that passed: the server's
// read timeout cutting off a slow body.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// proxyServer is a running proxy and its API.
type proxyServer struct {
	proxy *netem.Proxy
	mu    sync.Mutex
	now   map[string]string // what each direction runs, as written
}

// status is GET /status's answer.
type proxyStatus struct {
	Listen  string            `json:"listen"`
	Clients int               `json:"clients"`
	Up      netem.Stats       `json:"up"`
	Down    netem.Stats       `json:"down"`
	Now     map[string]string `json:"impairments"`
}

func (s *proxyServer) status() proxyStatus {
	up, down := s.proxy.Stats()
	s.mu.Lock()
	defer s.mu.Unlock()
	now := map[string]string{}
	for k, v := range s.now {
		now[k] = v
	}
	return proxyStatus{Listen: s.proxy.Addr().String(), Clients: s.proxy.Clients(), Up: up, Down: down, Now: now}
}

// ServeHTTP is the API.
func (s *proxyServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/status" && r.Method == http.MethodGet:
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(s.status())
	case r.Method == http.MethodPut && (r.URL.Path == "/up" || r.URL.Path == "/down" || r.URL.Path == "/both"):
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxPhaseBody))
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			http.Error(w, fmt.Sprintf("a phase is at most %d bytes", maxPhaseBody), http.StatusRequestEntityTooLarge)
			return
		case isTimeout(err):
			http.Error(w, fmt.Sprintf("the body did not arrive within %v", apiReadTimeout), http.StatusRequestTimeout)
			return
		case err != nil:
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		up, down, err := phaseImpairments(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		dir := strings.TrimPrefix(r.URL.Path, "/")
		if dir == "up" || dir == "both" {
			err = errors.Join(err, s.proxy.SetForward(up))
		}
		if dir == "down" || dir == "both" {
			err = errors.Join(err, s.proxy.SetReverse(down))
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		for _, d := range []string{"up", "down"} {
			if dir == d || dir == "both" {
				s.now[d] = strings.TrimSpace(string(body))
			}
		}
		s.mu.Unlock()
		fmt.Fprintf(w, "%s: %s\n", dir, strings.TrimSpace(string(body)))
	default:
		http.Error(w, "GET /status, or PUT /up, /down or /both with a phase like {delay: 50ms, loss: 2%}", http.StatusNotFound)
	}
}

// proxyConfig is the proxy lab proxy runs: the scenario's links, and the
// ECN bits carried when asked or when the scenario's session is
// ECN-capable.
func proxyConfig(f proxyFlags, sc *scenarios.Scenario, up, down netem.LinkConfig) netem.ProxyConfig {
	return netem.ProxyConfig{Listen: f.listen, Target: f.target, Forward: up, Reverse: down, ECN: f.ecn || sc.ECN != ""}
}

// proxyCmd runs lab proxy; ready, when set, gets the proxy's and the API's
// addresses once both listen (for tests).
func proxyCmd(ctx context.Context, args []string, out io.Writer, ready func(proxy, api string)) error {
	f, err := parseProxy(args, out)
	if err != nil {
		return err
	}
	sc, err := loadScenario(f.scenario)
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	up, down, err := plan.Links(sc)
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	p, err := netem.NewProxy(proxyConfig(f, sc, up, down))
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	defer p.Close()
	srv := &proxyServer{proxy: p, now: map[string]string{"up": "scenario " + sc.Name, "down": "scenario " + sc.Name}}
	apiAddr := ""
	if f.api != "" {
		ln, err := net.Listen("tcp", f.api)
		if err != nil {
			return fmt.Errorf("proxy: API: %w", err)
		}
		hs := newAPIServer(srv)
		go hs.Serve(ln)
		defer hs.Close()
		apiAddr = ln.Addr().String()
	}
	fmt.Fprintf(out, "proxy: %s -> %s with scenario %s's network (up: client to target, down: back)\n", p.Addr(), f.target, sc.Name)
	if apiAddr != "" {
		fmt.Fprintf(out, "proxy: API on http://%s (GET /status, PUT /up, /down, /both)\n", apiAddr)
	}
	if ready != nil {
		ready(p.Addr().String(), apiAddr)
	}
	if f.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.duration)
		defer cancel()
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			st := srv.status()
			fmt.Fprintf(out, "\nproxy: done; up %d packets in, %d out; down %d in, %d out\n",
				st.Up.Offered.Packets, st.Up.Delivered.Packets, st.Down.Offered.Packets, st.Down.Delivered.Packets)
			return nil
		case <-tick.C:
			st := srv.status()
			fmt.Fprintf(os.Stderr, "\rproxy: %d clients; up %d in %d out %d dropped; down %d in %d out %d dropped   ",
				st.Clients, st.Up.Offered.Packets, st.Up.Delivered.Packets, st.Up.DroppedTotal().Packets,
				st.Down.Offered.Packets, st.Down.Delivered.Packets, st.Down.DroppedTotal().Packets)
		}
	}
}

// proxyMain is lab proxy from the command line: it stops on Ctrl-C.
func proxyMain(args []string, out io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return proxyCmd(ctx, args, out, nil)
}
