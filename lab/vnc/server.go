package vnc

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	mathrand "math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nuvirahub/latencylab/internal/procgroup"
	"github.com/nuvirahub/latencylab/lab/vnc/rfb"
	"github.com/nuvirahub/latencylab/netem/kernel"
)

// The servers lab vnc knows.
const (
	X11vnc = "x11vnc" // x11vnc scraping an Xvfb display
	Xvnc   = "xvnc"   // TigerVNC's Xvnc, an X server that is its own VNC server
	// Xrdp is xrdp, the RDP server, in front of an Xvnc desktop (its
	// "vnc-any" way, as Debian ships it: xrdp speaks RDP to the viewer
	// and VNC to the desktop, over this host's loopback).
	Xrdp = "xrdp"
	// ServerCommand is the user's own server: a shell command line
	// (ServerConfig.Command) that serves the Xvfb display the lab draws
	// on, in whatever protocol, listening where the lab says
	// (CommandEnv).
	ServerCommand = "cmd"
)

// Servers lists them, for flags and messages; VNCServers are those a VNC
// viewer (the lab's client among them) connects to.
var (
	Servers    = []string{X11vnc, Xvnc, Xrdp, ServerCommand}
	VNCServers = []string{X11vnc, Xvnc}
)

// RDP tells whether a server speaks RDP to its viewers (VNC otherwise; a
// user's command speaks what it speaks).
func RDP(server string) bool { return server == Xrdp }

// InstallHint is how to install every program lab vnc runs, on Debian.
const InstallHint = "apt-get install -y xvfb x11vnc tigervnc-standalone-server xrdp"

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
	case Xrdp:
		return []string{"Xvnc", "xrdp"}, nil
	case ServerCommand:
		return []string{"Xvfb", "sh"}, nil
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
	return needPrograms(kind, bins, InstallHint)
}

// needPrograms says which of bins, what needs them, are not on PATH, and
// how to install them (hint); nil when all are.
func needPrograms(what string, bins []string, hint string) error {
	var missing []string
	for _, b := range bins {
		if _, err := exec.LookPath(b); err != nil {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s needs %s, not found on PATH: install with `%s`", ErrMissing, what, strings.Join(missing, " and "), hint)
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
	// Command is ServerCommand's command line, run by sh with CommandEnv.
	Command string
}

// CommandEnv is the environment a user's server or viewer command gets
// beyond the lab's own: the X display it serves or presents on (LAB_DISPLAY,
// and DISPLAY too), the address and port the server listens on and the
// viewer connects to (LAB_ADDR, LAB_PORT), the display's size (LAB_WIDTH,
// LAB_HEIGHT), the run's password (LAB_PASSWORD; a server may ignore it)
// and a folder of the run's own (LAB_HOME, and HOME too).
func CommandEnv(display string, addr netip.AddrPort, w, h int, password, home string) []string {
	env := []string{"LAB_DISPLAY=" + display, "LAB_ADDR=" + addr.Addr().String(), fmt.Sprintf("LAB_PORT=%d", addr.Port()),
		fmt.Sprintf("LAB_WIDTH=%d", w), fmt.Sprintf("LAB_HEIGHT=%d", h), "LAB_PASSWORD=" + password, "LAB_HOME=" + home}
	return append(env, viewerEnv(display, home)...)
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
	procs    []proc
	dir      string
}

// proc is a server program and the end of its goroutine's wait.
type proc struct {
	cmd  *exec.Cmd
	done <-chan struct{}
}

// launch starts cmd with kernel.StartPinned: the kernel mode's namespace
// switches end the threads they leave locked, and a server started from
// one would die with it (its parent-death signal follows the thread).
func (s *Server) launch(cmd *exec.Cmd) error {
	done, err := kernel.StartPinned(cmd)
	if err != nil {
		return err
	}
	s.procs = append(s.procs, proc{cmd: cmd, done: done})
	return nil
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
	pwFile := s.PasswordFile()
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
		if s.Display, err = s.startX(ctx, cfg.Log, "Xvfb", "", "-screen", "0", geometry+"x24", "-nolisten", "tcp"); err != nil {
			return nil, err
		}
		// x11vnc as it is run on a desktop, with its defaults (polling
		// the screen, helped by the X DAMAGE extension); no cursor drawn
		// into the framebuffer, so that what it sends is the display's
		// contents, and never a second client's forced exit.
		var got uint16
		got, err = s.startX11vnc(ctx, cfg.Log, "-display", s.Display, "-rfbport", strconv.Itoa(int(port)), "-listen", cfg.Listen.String(),
			"-rfbauth", pwFile, "-forever", "-shared", "-nocursor", "-noipv6", "-nossl", "-norc")
		if err == nil && got != port {
			// x11vnc moves to another port when its own is taken.
			s.Addr = netip.AddrPortFrom(cfg.Listen, got)
		}
	case Xvnc:
		s.Display, err = s.startXvnc(ctx, cfg.Log, geometry, cfg.Listen, port)
	case ServerCommand:
		if s.Display, err = s.startX(ctx, cfg.Log, "Xvfb", "", "-screen", "0", geometry+"x24", "-nolisten", "tcp", "-noreset"); err == nil {
			err = s.startCommand(ctx, cfg)
		}
	case Xrdp:
		// The desktop is an Xvnc on the loopback, which only xrdp, on
		// this host, connects to.
		loop := netip.MustParseAddr("127.0.0.1")
		var vport uint16
		if vport, err = freePort(loop); err != nil {
			return nil, err
		}
		if s.Display, err = s.startXvnc(ctx, cfg.Log, geometry, loop, vport); err == nil {
			err = s.startXrdp(ctx, cfg.Log, netip.AddrPortFrom(loop, vport))
		}
	}
	if err != nil {
		return nil, err
	}
	if ok, err := listening(s.Addr); err == nil && !ok {
		return nil, fmt.Errorf("vnc: %s is not listening on %v once started (its output, with lab vnc -v, says why)", cfg.Kind, s.Addr)
	}
	return s, nil
}

// StartDisplay starts a bare Xvfb display of w x h at depth 24, with no
// VNC server: the display a viewer presents on, for a glass-to-glass run.
// Close stops it.
func StartDisplay(ctx context.Context, w, h int, log io.Writer) (_ *Server, err error) {
	if _, err := exec.LookPath("Xvfb"); err != nil {
		return nil, fmt.Errorf("%w: a viewer's display needs Xvfb, not found on PATH: install with `%s`", ErrMissing, InstallHint)
	}
	if log == nil {
		log = io.Discard
	}
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	s := &Server{}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	// -noreset: an X server resets when its last client leaves, clearing
	// the screen, and a viewer restarted or a reader reconnecting would
	// find a blank display, or a connection refused mid-reset.
	s.Display, err = s.startX(ctx, log, "Xvfb", "", "-screen", "0", fmt.Sprintf("%dx%dx24", w, h), "-nolisten", "tcp", "-noreset")
	return s, err
}

// freePort finds a port free on addr, below the kernel's range of
// ephemeral ports (32768 and up by default): a port from that range,
// free when checked, could meanwhile be given to any process on this
// machine that listens on port 0 or connects, and the client would reach
// that process instead of the server.
func freePort(addr netip.Addr) (uint16, error) {
	var last error
	for range 50 {
		port := uint16(20000 + mathrand.IntN(12000))
		l, err := net.Listen("tcp", netip.AddrPortFrom(addr, port).String())
		if err != nil {
			last = err
			continue
		}
		l.Close()
		return port, nil
	}
	return 0, fmt.Errorf("vnc: no free port on %v: %w", addr, last)
}

// listening tells whether a TCP socket listens on ap (IPv4), from the
// kernel's table of this thread's network namespace: a server that could
// not bind its port says so only in its log, and goes on running. Not
// /proc/net, which is the main thread's namespace, and the kernel mode may
// have switched that one into a namespace of its own for good.
func listening(ap netip.AddrPort) (bool, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b, err := os.ReadFile("/proc/thread-self/net/tcp")
	if err != nil {
		return false, err
	}
	a := ap.Addr().As4()
	// The address as the kernel prints it: the 32-bit word in host
	// (little-endian) order, then the port.
	want := fmt.Sprintf("%02X%02X%02X%02X:%04X", a[3], a[2], a[1], a[0], ap.Port())
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 3 && f[1] == want && f[3] == "0A" {
			return true, nil
		}
	}
	return false, nil
}

// start starts a server program in its own process group, which dies with
// this process. Its standard error goes to stderr (nil: log).
func (s *Server) start(name string, log, stderr io.Writer, args []string, extra ...*os.File) (*exec.Cmd, error) {
	if stderr == nil {
		stderr = log
	}
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = log, stderr
	cmd.ExtraFiles = extra
	cmd.SysProcAttr = procgroup.Attr()
	if err := s.launch(cmd); err != nil {
		return nil, fmt.Errorf("vnc: starting %s: %w", name, err)
	}
	return cmd, nil
}

// startX starts an X server (Xvfb or Xvnc) that picks a free display and
// writes its number on fd 3 once it accepts X clients. With ready, it
// also waits for the line of its standard error that contains ready:
// Xvnc opens its VNC port after it has written its display.
func (s *Server) startX(ctx context.Context, log io.Writer, name, ready string, args ...string) (string, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return "", fmt.Errorf("vnc: %w", err)
	}
	defer r.Close()
	var er, ew *os.File
	if ready != "" {
		if er, ew, err = os.Pipe(); err != nil {
			w.Close()
			return "", fmt.Errorf("vnc: %w", err)
		}
	}
	var stderr io.Writer
	if ew != nil {
		stderr = ew
	}
	_, err = s.start(name, log, stderr, append([]string{"-displayfd", "3"}, args...), w)
	w.Close()
	if ew != nil {
		ew.Close()
	}
	if err != nil {
		if er != nil {
			er.Close()
		}
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
	if er != nil {
		if _, err := readLine(ctx, er, func(l string) bool { fmt.Fprintln(log, l); return strings.Contains(l, ready) }); err != nil {
			er.Close()
			return "", fmt.Errorf("vnc: %s did not say %q: %w", name, ready, err)
		}
		// The rest of its output goes on to the log; the pipe ends with
		// the server.
		go func() { _, _ = io.Copy(log, er); er.Close() }()
	}
	return ":" + strconv.Itoa(n), nil
}

// startXvnc starts Xvnc of geometry, its VNC server on listen:port with
// the run's password, and returns its display.
func (s *Server) startXvnc(ctx context.Context, log io.Writer, geometry string, listen netip.Addr, port uint16) (string, error) {
	return s.startX(ctx, log, "Xvnc", "created VNC server for screen", "-geometry", geometry, "-depth", "24", "-rfbport", strconv.Itoa(int(port)),
		"-interface", listen.String(), "-SecurityTypes", "VncAuth", "-PasswordFile", s.PasswordFile(),
		"-AlwaysShared", "-nolisten", "tcp")
}

// xrdpConfig is the xrdp.ini of a run: xrdp in the foreground on s.Addr,
// TLS with Debian's snake-oil certificate (xrdp's own RDP security fails
// FreeRDP's MAC checks at every level it offers), no login screen, and
// the one session: the desktop's VNC server at desktop, with the run's
// password.
func (s *Server) xrdpConfig(desktop netip.AddrPort) string {
	return fmt.Sprintf(`[Globals]
ini_version=1
fork=false
port=tcp://%s:%d
use_vsock=false
tcp_nodelay=true
security_layer=tls
certificate=/etc/xrdp/cert.pem
key_file=/etc/xrdp/key.pem
ssl_protocols=TLSv1.2, TLSv1.3
crypt_level=none
autorun=desktop
allow_channels=true
bitmap_cache=true
bitmap_compression=true
bulk_compression=true
max_bpp=24
new_cursors=true
use_fastpath=both

[Logging]
LogFile=%s
LogLevel=INFO
EnableSyslog=false
EnableConsole=true
ConsoleLevel=INFO

[desktop]
name=desktop
lib=libvnc.so
ip=%s
port=%d
username=lab
password=%s
`, s.Addr.Addr(), s.Addr.Port(), filepath.Join(s.dir, "xrdp.log"), desktop.Addr(), desktop.Port(), s.Password)
}

// startXrdp starts xrdp in front of the desktop's VNC server and waits for
// its "xrdp_listen_pp done" line, which it writes once it listens (its
// "listening to port" line comes before the socket does).
func (s *Server) startXrdp(ctx context.Context, log io.Writer, desktop netip.AddrPort) error {
	ini := filepath.Join(s.dir, "xrdp.ini")
	if err := os.WriteFile(ini, []byte(s.xrdpConfig(desktop)), 0o600); err != nil {
		return fmt.Errorf("vnc: %w", err)
	}
	// Its console log goes through C's stdio, which holds a pipe's output
	// until it exits: stdbuf (coreutils) makes it a line at a time.
	cmd := exec.Command("stdbuf", "-oL", "xrdp", "--nodaemon", "--config", ini)
	_, err := s.startUntil(ctx, "xrdp", cmd, log, func(l string) bool { fmt.Fprintln(log, l); return strings.Contains(l, "xrdp_listen_pp done") })
	return err
}

// startUntil starts cmd (name, for messages) with its standard output, and
// its standard error when cmd leaves that unset, on a pipe read until a
// line satisfies ready, which it returns. The rest goes on to log, so
// that the program never blocks on a full pipe; the pipe ends with the
// program.
func (s *Server) startUntil(ctx context.Context, name string, cmd *exec.Cmd, log io.Writer, ready func(string) bool) (string, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return "", fmt.Errorf("vnc: %w", err)
	}
	cmd.Stdout = w
	if cmd.Stderr == nil {
		cmd.Stderr = w
	}
	cmd.SysProcAttr = procgroup.Attr()
	if err := s.launch(cmd); err != nil {
		w.Close()
		r.Close()
		return "", fmt.Errorf("vnc: starting %s: %w", name, err)
	}
	w.Close()
	line, err := readLine(ctx, r, ready)
	if err != nil {
		r.Close()
		return "", fmt.Errorf("vnc: %s did not start listening: %w", name, err)
	}
	go func() { _, _ = io.Copy(log, r); r.Close() }()
	return line, nil
}

// startCommand starts the user's server command with CommandEnv and
// waits until something listens on s.Addr: the kernel's socket table,
// read every 20 ms until StartTimeout (a command says nothing the lab
// could wait for), or the command's end, which fails the start.
func (s *Server) startCommand(ctx context.Context, cfg ServerConfig) error {
	if strings.TrimSpace(cfg.Command) == "" {
		return fmt.Errorf("vnc: server %s needs a command line", ServerCommand)
	}
	cmd := exec.Command("sh", "-c", cfg.Command)
	cmd.Env = CommandEnv(s.Display, s.Addr, cfg.Width, cfg.Height, s.Password, s.dir)
	cmd.Stdout, cmd.Stderr = cfg.Log, cfg.Log
	cmd.SysProcAttr = procgroup.Attr()
	if err := s.launch(cmd); err != nil {
		return fmt.Errorf("vnc: starting the server's command: %w", err)
	}
	done := s.procs[len(s.procs)-1].done
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if ok, err := listening(s.Addr); err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("vnc: the server's command did not listen on %v within %v (its output, with -v, says why)", s.Addr, StartTimeout)
		case <-done:
			return fmt.Errorf("vnc: the server's command ended (%v) before it listened on %v (its output, with -v, says why)", cmd.ProcessState, s.Addr)
		case <-tick.C:
		}
	}
}

// startX11vnc starts x11vnc and waits for its "PORT=" line, printed once
// it listens, and returns that port.
func (s *Server) startX11vnc(ctx context.Context, log io.Writer, args ...string) (uint16, error) {
	cmd := exec.Command("x11vnc", args...)
	cmd.Stderr = log
	line, err := s.startUntil(ctx, "x11vnc", cmd, log, func(l string) bool { return strings.HasPrefix(l, "PORT=") })
	if err != nil {
		return 0, err
	}
	port, err := strconv.ParseUint(strings.TrimPrefix(line, "PORT="), 10, 16)
	if err != nil {
		return 0, fmt.Errorf("vnc: x11vnc said %q", line)
	}
	return uint16(port), nil
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
		p := s.procs[i]
		// The first is the X server (Xvfb, or Xvnc itself): killed, it
		// leaves its socket and lock file behind; ended cleanly, it removed
		// them, and the display may already be another server's.
		if procgroup.Stop(p.cmd, p.done, syscall.SIGTERM) && i == 0 {
			errs = append(errs, procgroup.RemoveXFiles(s.Display))
		}
	}
	s.procs = nil
	if s.dir != "" {
		errs = append(errs, os.RemoveAll(s.dir))
		s.dir = ""
	}
	return errors.Join(errs...)
}

// PasswordFile is the file holding Password in VNC's format, which a
// viewer reads (vncviewer -passwd).
func (s *Server) PasswordFile() string { return filepath.Join(s.dir, "passwd") }

// Pids are the server's processes, for a test that checks they are gone.
func (s *Server) Pids() []int {
	var out []int
	for _, p := range s.procs {
		out = append(out, p.cmd.Process.Pid)
	}
	return out
}
