package vnc

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nuvirahub/latencylab/lab/vnc/rfb"
)

// The servers lab vnc knows.
const (
	X11vnc = "x11vnc" // x11vnc scraping an Xvfb display
	Xvnc   = "xvnc"   // TigerVNC's Xvnc, an X server that is its own VNC server
)

// Servers lists them, for flags and messages.
var Servers = []string{X11vnc, Xvnc}

// InstallHint is how to install every program lab vnc runs, on Debian.
const InstallHint = "apt-get install -y xvfb x11vnc tigervnc-standalone-server"

// ErrMissing is wrapped by Check's error: a server's program is not
// installed.
var ErrMissing = errors.New("vnc: server not installed")

// StartTimeout bounds how long a server has to get ready.
const StartTimeout = 20 * time.Second

// binaries are the programs each server needs.
func binaries(kind string) ([]string, error) {
	switch kind {
	case X11vnc:
		return []string{"Xvfb", "x11vnc"}, nil
	case Xvnc:
		return []string{"Xvnc"}, nil
	}
	return nil, fmt.Errorf("vnc: unknown server %q (%s)", kind, strings.Join(Servers, ", "))
}

// Check says whether kind's programs are installed, and how to install
// them when they are not.
func Check(kind string) error {
	bins, err := binaries(kind)
	if err != nil {
		return err
	}
	var missing []string
	for _, b := range bins {
		if _, err := exec.LookPath(b); err != nil {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s needs %s, not found on PATH: install with `%s`", ErrMissing, kind, strings.Join(missing, " and "), InstallHint)
	}
	return nil
}

// ServerConfig is a server to start.
type ServerConfig struct {
	// Kind is X11vnc or Xvnc.
	Kind string
	// Width and Height are the X display's size.
	Width, Height int
	// Listen is the one address the VNC server accepts connections on
	// (the kernel mode's gateway, or the loopback): never all of the
	// host's.
	Listen netip.Addr
	// Log receives the servers' own output (nil: dropped).
	Log io.Writer
}

// Server is a running X display and VNC server. Close stops them.
type Server struct {
	// Display is the X display, ":3" for instance.
	Display string
	// Addr is where the VNC server listens.
	Addr netip.AddrPort
	// Password is the VNC Authentication password, fresh for each server:
	// the server listens on an address other programs could reach.
	Password string
	procs    []*exec.Cmd
	dir      string
}

// Start starts the X display and the VNC server, and returns once the
// server accepts connections: Xvfb and Xvnc say when they are ready by
// writing their display number (-displayfd), x11vnc by printing its port.
// Whatever it started is stopped again when it fails or ctx ends first.
func Start(ctx context.Context, cfg ServerConfig) (_ *Server, err error) {
	if err := Check(cfg.Kind); err != nil {
		return nil, err
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	dir, err := os.MkdirTemp("", "lab-vnc-")
	if err != nil {
		return nil, fmt.Errorf("vnc: %w", err)
	}
	s := &Server{dir: dir}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	var pw [6]byte
	if _, err := rand.Read(pw[:]); err != nil {
		return nil, fmt.Errorf("vnc: %w", err)
	}
	s.Password = hex.EncodeToString(pw[:])[:8]
	pwFile := filepath.Join(dir, "passwd")
	if err := os.WriteFile(pwFile, rfb.PasswordFile(s.Password), 0o600); err != nil {
		return nil, fmt.Errorf("vnc: %w", err)
	}
	port, err := freePort(cfg.Listen)
	if err != nil {
		return nil, err
	}
	s.Addr = netip.AddrPortFrom(cfg.Listen, port)
	geometry := fmt.Sprintf("%dx%d", cfg.Width, cfg.Height)
	switch cfg.Kind {
	case X11vnc:
		if s.Display, err = s.startX(ctx, cfg.Log, "Xvfb", "-screen", "0", geometry+"x24", "-nolisten", "tcp"); err != nil {
			return nil, err
		}
		// x11vnc as it is run on a desktop, with its defaults (polling
		// the screen, helped by the X DAMAGE extension); no cursor drawn
		// into the framebuffer, so that what it sends is the display's
		// contents, and never a second client's forced exit.
		err = s.startX11vnc(ctx, cfg.Log, "-display", s.Display, "-rfbport", strconv.Itoa(int(port)), "-listen", cfg.Listen.String(),
			"-rfbauth", pwFile, "-forever", "-shared", "-nocursor", "-noipv6", "-nossl", "-norc")
	case Xvnc:
		s.Display, err = s.startX(ctx, cfg.Log, "Xvnc", "-geometry", geometry, "-depth", "24", "-rfbport", strconv.Itoa(int(port)),
			"-interface", cfg.Listen.String(), "-SecurityTypes", "VncAuth", "-PasswordFile", pwFile,
			"-AlwaysShared", "-nolisten", "tcp")
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// freePort finds a port free on addr.
func freePort(addr netip.Addr) (uint16, error) {
	l, err := net.Listen("tcp", netip.AddrPortFrom(addr, 0).String())
	if err != nil {
		return 0, fmt.Errorf("vnc: finding a free port on %v: %w", addr, err)
	}
	defer l.Close()
	return uint16(l.Addr().(*net.TCPAddr).Port), nil
}

// start starts a server program in its own process group, which dies with
// this process.
func (s *Server) start(name string, log io.Writer, args []string, extra ...*os.File) (*exec.Cmd, error) {
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.ExtraFiles = extra
	cmd.SysProcAttr = serverProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("vnc: starting %s: %w", name, err)
	}
	s.procs = append(s.procs, cmd)
	return cmd, nil
}

// startX starts an X server (Xvfb or Xvnc) that picks a free display and
// writes its number on fd 3 once it accepts clients.
func (s *Server) startX(ctx context.Context, log io.Writer, name string, args ...string) (string, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return "", fmt.Errorf("vnc: %w", err)
	}
	defer r.Close()
	_, err = s.start(name, log, append([]string{"-displayfd", "3"}, args...), w)
	w.Close()
	if err != nil {
		return "", err
	}
	line, err := readLine(ctx, r, func(string) bool { return true })
	if err != nil {
		return "", fmt.Errorf("vnc: %s did not say its display: %w", name, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		return "", fmt.Errorf("vnc: %s wrote %q for its display", name, line)
	}
	return ":" + strconv.Itoa(n), nil
}

// startX11vnc starts x11vnc and waits for its "PORT=" line, printed once
// it listens.
func (s *Server) startX11vnc(ctx context.Context, log io.Writer, args ...string) error {
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("vnc: %w", err)
	}
	cmd := exec.Command("x11vnc", args...)
	cmd.Stdout, cmd.Stderr = w, log
	cmd.SysProcAttr = serverProcAttr()
	if err := cmd.Start(); err != nil {
		w.Close()
		r.Close()
		return fmt.Errorf("vnc: starting x11vnc: %w", err)
	}
	w.Close()
	s.procs = append(s.procs, cmd)
	if _, err := readLine(ctx, r, func(l string) bool { return strings.HasPrefix(l, "PORT=") }); err != nil {
		r.Close()
		return fmt.Errorf("vnc: x11vnc did not start listening: %w", err)
	}
	// Its standard output goes on to the log, so that x11vnc never blocks
	// on a full pipe; the pipe ends with x11vnc.
	go func() { _, _ = io.Copy(log, r); r.Close() }()
	return nil
}

// readLine reads lines from r until one satisfies ok, ctx ends or r does.
// r is closed on ctx's end, which unblocks the read.
func readLine(ctx context.Context, r *os.File, ok func(string) bool) (string, error) {
	type res struct {
		line string
		err  error
	}
	got := make(chan res, 1)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if ok(sc.Text()) {
				got <- res{line: sc.Text()}
				return
			}
		}
		err := sc.Err()
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		got <- res{err: fmt.Errorf("it ended first (%w)", err)}
	}()
	select {
	case g := <-got:
		return g.line, g.err
	case <-ctx.Done():
		_ = r.SetReadDeadline(time.Now())
		return "", ctx.Err()
	}
}

// Close stops the VNC server and the X display (SIGTERM, then SIGKILL
// after a second) and removes the password file. It may be called more
// than once.
func (s *Server) Close() error {
	var errs []error
	for i := len(s.procs) - 1; i >= 0; i-- {
		cmd := s.procs[i]
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	s.procs = nil
	if n := strings.TrimPrefix(s.Display, ":"); n != "" {
		// An X server that was killed (SIGKILL) leaves its socket and lock
		// file behind; one that ended cleanly removed them already.
		for _, f := range []string{"/tmp/.X11-unix/X" + n, "/tmp/.X" + n + "-lock"} {
			if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	if s.dir != "" {
		errs = append(errs, os.RemoveAll(s.dir))
		s.dir = ""
	}
	return errors.Join(errs...)
}

// Pids are the server's processes, for a test that checks they are gone.
func (s *Server) Pids() []int {
	var out []int
	for _, c := range s.procs {
		out = append(out, c.Process.Pid)
	}
	return out
}
