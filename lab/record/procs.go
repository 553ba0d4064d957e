package record

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nuvirahub/latencylab/internal/procgroup"
)

// tailBytes is how much of a program's standard error is kept, to say why
// it failed.
const tailBytes = 2048

// tail keeps the last tailBytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailBytes {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailBytes:]...)
	}
	return len(p), nil
}

// String is the kept text, trimmed, or a note that there was none.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.buf))
	if s == "" {
		return "(nothing on its standard error)"
	}
	return s
}

// proc is a started program: its own process group, so that stopping it
// stops what it started too (bash in an xterm, chromium's renderers).
type proc struct {
	name string
	cmd  *exec.Cmd
	err  *tail
	done chan struct{}
	// exit is the program's end, once done is closed.
	exit error
}

// procs are the programs of one recording, stopped together.
type procs struct {
	env []string
	// dir is the programs' working directory (the recording's home).
	dir  string
	log  io.Writer
	list []*proc
	// display is the X server's (the first program's), once it said it.
	display string
}

// start starts a program with the recording's environment in a process
// group of its own; its standard output and error go to the log, and the
// last of its standard error is kept for the error that names it.
func (ps *procs) start(name string, args []string, extra ...*os.File) (*proc, error) {
	p := &proc{name: name, err: &tail{}, done: make(chan struct{})}
	cmd := exec.Command(name, args...)
	cmd.Env, cmd.Dir = ps.env, ps.dir
	cmd.Stdout = ps.log
	cmd.Stderr = io.MultiWriter(ps.log, p.err)
	cmd.ExtraFiles = extra
	cmd.SysProcAttr = procgroup.Attr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("record: starting %s: %w", name, err)
	}
	p.cmd = cmd
	go func() {
		p.exit = cmd.Wait()
		close(p.done)
	}()
	ps.list = append(ps.list, p)
	return p, nil
}

// failed is the error of a program that ended or did not do what was
// waited for (what), with the end of its standard error.
func (p *proc) failed(what string, err error) error {
	select {
	case <-p.done:
		return fmt.Errorf("record: %s ended (%v) %s; its standard error ends:\n%s", p.name, p.exit, what, p.err)
	default:
	}
	return fmt.Errorf("record: %s %s: %w; its standard error ends:\n%s", p.name, what, err, p.err)
}

// exited is a program that ended, nil while all run.
func (ps *procs) exited() *proc {
	for _, p := range ps.list {
		select {
		case <-p.done:
			return p
		default:
		}
	}
	return nil
}

// summary names every program with its process id, whether it still
// runs, and the end of its standard error, for an error that needs them
// all.
func (ps *procs) summary() string {
	parts := make([]string, len(ps.list))
	for i, p := range ps.list {
		state := "running"
		select {
		case <-p.done:
			state = fmt.Sprintf("ended (%v)", p.exit)
		default:
		}
		parts[i] = fmt.Sprintf("%s %d %s, standard error %q", p.name, p.cmd.Process.Pid, state, p.err)
	}
	return strings.Join(parts, "; ")
}

// signal sends sig to every program's group but the first (the X
// server), the last started first.
func (ps *procs) signalApps(sig syscall.Signal) {
	for i := len(ps.list) - 1; i >= 1; i-- {
		_ = syscall.Kill(-ps.list[i].cmd.Process.Pid, sig)
	}
}

// stop ends every program, the last started first: the applications'
// groups are killed (they may be stopped, which SIGTERM would not end),
// the X server asked to end (SIGTERM, so that it removes its socket and
// lock file) and killed after a second, its files then removed. It runs
// once the recording is done with the display, never before: files removed
// while the server runs would free its display number for another server
// (lab vnc's tests start theirs beside these), whose clients would then
// reach the wrong one.
func (ps *procs) stop() {
	for i := len(ps.list) - 1; i >= 0; i-- {
		p := ps.list[i]
		if i > 0 {
			procgroup.Stop(p.cmd, p.done, syscall.SIGKILL)
			continue
		}
		if procgroup.Stop(p.cmd, p.done, syscall.SIGTERM) && ps.display != "" {
			_ = procgroup.RemoveXFiles(ps.display)
		}
	}
	ps.list = nil
}

// startX starts Xvfb on a display it picks itself (-displayfd: it writes
// the number once it accepts clients, so nothing is polled or slept for)
// and returns the display's name.
func (ps *procs) startX(ctx context.Context, w, h int) (string, error) {
	r, wr, err := os.Pipe()
	if err != nil {
		return "", fmt.Errorf("record: %w", err)
	}
	defer r.Close()
	p, err := ps.start("Xvfb", []string{"-displayfd", "3", "-screen", "0", fmt.Sprintf("%dx%dx24", w, h),
		"-nolisten", "tcp", "-noreset", "-dpi", "96"}, wr)
	wr.Close()
	if err != nil {
		return "", err
	}
	type res struct {
		line string
		err  error
	}
	got := make(chan res, 1)
	go func() {
		line, err := bufio.NewReader(r).ReadString('\n')
		got <- res{line, err}
	}()
	select {
	case g := <-got:
		n, err := strconv.Atoi(strings.TrimSpace(g.line))
		if g.err != nil || err != nil {
			<-p.done // the pipe ended: so did Xvfb
			return "", p.failed("did not say its display", errors.Join(g.err, err))
		}
		ps.display = ":" + strconv.Itoa(n)
		return ps.display, nil
	case <-ctx.Done():
		_ = r.SetReadDeadline(time.Now())
		return "", p.failed("did not say its display", ctx.Err())
	}
}
