//go:build linux

package vnc

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/nuvirahub/latencylab/lab/plan"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/lab/vnc/screendrive"
	"github.com/nuvirahub/latencylab/netem/kernel"
)

// Available says why Run cannot run here (the kernel mode needs root),
// nil when it can.
func Available() error { return kernel.Available() }

// Run measures one VNC server through the scenario's network: the kernel
// mode's namespace holds the client, whose TCP connection to the server on
// this host crosses the scenario's up link (client to server) and down
// link (server to client). Everything it starts (the namespace, the X
// display, the VNC server) is stopped before it returns, whatever
// happened; a cancelled ctx ends the run early with what it measured so
// far, marked interrupted.
func Run(ctx context.Context, cfg Config) (_ *result.Run, err error) {
	cfg, err = cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := Check(cfg.Server); err != nil {
		return nil, err
	}
	if err := CheckViewer(cfg.Viewer); err != nil {
		return nil, err
	}
	if err := kernel.Available(); err != nil {
		return nil, fmt.Errorf("vnc: %w", err)
	}
	frames, err := cfg.frames()
	if err != nil {
		return nil, err
	}
	up, down, err := plan.Links(cfg.Scenario)
	if err != nil {
		return nil, err
	}
	pair, err := kernel.New(kernel.Config{AtoB: up, BtoA: down, HostB: true, OwnSignals: true})
	if err != nil {
		return nil, fmt.Errorf("vnc: %w", err)
	}
	defer pair.Close()
	srv, err := Start(ctx, ServerConfig{Kind: cfg.Server, Width: cfg.Width, Height: cfg.Height, Listen: pair.AddrB(), Log: cfg.Log,
		Command: cfg.ServerCmd})
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	if cfg.Started != nil {
		cfg.Started(Started{Server: srv, Namespace: pair.NamespaceA()})
	}
	fmt.Fprintf(cfg.Log, "lab vnc: %s on display %s listening on %v; the client in namespace %s at %v; screen %s %dx%d, seed %d, %v\n",
		cfg.Server, srv.Display, srv.Addr, pair.NamespaceA(), pair.AddrA(), cfg.Screen, cfg.Width, cfg.Height, cfg.Seed, cfg.Duration)

	// The links' counters, every SampleEvery, for the result's series.
	var (
		smu     sync.Mutex
		samples []linkSample
	)
	sample := func() {
		a, b := pair.Stats()
		smu.Lock()
		samples = append(samples, linkSample{at: time.Now(), up: a, down: b})
		smu.Unlock()
	}
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(result.DefaultSampleEvery)
		defer tick.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-tick.C:
				sample()
			}
		}
	}()
	sample()
	var o *observed
	if cfg.Viewer == ViewerLab {
		var conn net.Conn
		err = pair.InA(func() error {
			d := net.Dialer{Timeout: StartTimeout}
			c, err := d.DialContext(ctx, "tcp", srv.Addr.String())
			conn = c
			return err
		})
		if err == nil {
			o, err = session(ctx, sessionConfig{conn: conn, password: srv.Password, encoding: cfg.Encoding, display: srv.Display,
				frames: frames, duration: cfg.Duration, drain: cfg.Drain, paced: true})
		} else {
			err = fmt.Errorf("vnc: connecting from the scenario's network: %w", err)
		}
	} else {
		o, err = glassRun(ctx, cfg, srv, pair, frames)
	}
	close(stopSampling)
	<-sampled
	sample()
	if o == nil {
		return nil, err
	}
	if cfg.Updates != nil {
		cfg.Updates(o.updates)
	}
	if cfg.Presented != nil {
		cfg.Presented(o.presented)
	}
	interrupted := ""
	switch {
	case err != nil:
		interrupted = err.Error()
	case !o.drained:
		interrupted = fmt.Sprintf("the last change was not shown %v after it was drawn", cfg.Drain)
	}
	return record(cfg, o, samples, interrupted), nil
}

// glassRun is a glass-to-glass session: the viewer on a display of its own
// on this host, its program in the scenario's namespace, connected to the
// server across the links.
func glassRun(ctx context.Context, cfg Config, srv *Server, pair *kernel.Pair, frames *screendrive.Frames) (*observed, error) {
	vd, err := StartDisplay(ctx, cfg.Width, cfg.Height, cfg.Log)
	if err != nil {
		return nil, err
	}
	defer vd.Close()
	home, err := os.MkdirTemp("", "lab-viewer-")
	if err != nil {
		return nil, fmt.Errorf("vnc: %w", err)
	}
	defer os.RemoveAll(home)
	fmt.Fprintf(cfg.Log, "lab vnc: viewer %s on display %s, its marker read every %v\n", cfg.Viewer, vd.Display, cfg.WatchEvery)
	start := func() error {
		var ws netip.AddrPort
		if cfg.Viewer == ViewerNoVNC {
			if ws, err = vd.startWebsockify(srv, cfg.Log); err != nil {
				return err
			}
		}
		name, args := viewerCommand(cfg.Viewer, srv, ws, home, cfg.Width, cfg.Height, cfg.ViewerCmd)
		cmd, err := pair.CommandA(name, args...)
		if err != nil {
			return fmt.Errorf("vnc: %w", err)
		}
		cmd.Env = CommandEnv(vd.Display, srv.Addr, cfg.Width, cfg.Height, srv.Password, home)
		return vd.startIn(cmd, cfg.Log)
	}
	return glassSession(ctx, glassConfig{server: srv, viewer: cfg.Viewer, display: vd, frames: frames,
		duration: cfg.Duration, drain: cfg.Drain, every: cfg.WatchEvery, delay: cfg.Delay, start: start,
		presses: cfg.Presses, pressEvery: cfg.PressEvery, seed: cfg.Seed, click: cfg.Viewer == ViewerNoVNC})
}
