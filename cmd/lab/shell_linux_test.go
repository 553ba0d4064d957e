//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/nuvirahub/latencylab/netem/kernel"
)

// The shell's tests need root, and iperf3 and curl for the measurements.
// The rule: where CI=true or LAB_REQUIRE_KERNEL=1 (.ci/run sets both
// conditions' variable), a missing privilege or tool fails the test;
// elsewhere it skips, saying what is missing.
func requireShell(t *testing.T, tools ...string) {
	t.Helper()
	err := kernel.Available()
	for _, tool := range tools {
		if err == nil {
			if _, lerr := exec.LookPath(tool); lerr != nil {
				err = fmt.Errorf("%s is not installed (apt-get install -y %s)", tool, tool)
			}
		}
	}
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" || os.Getenv("LAB_REQUIRE_KERNEL") == "1" {
		t.Fatalf("lab shell's tests must run here (CI=true or LAB_REQUIRE_KERNEL=1), but %v", err)
	}
	t.Skipf("skipping: %v (in CI, or with LAB_REQUIRE_KERNEL=1, this fails)", err)
}

// shellScenario writes a scenario file with network (YAML under
// "network:") and returns its path.
func shellScenario(t *testing.T, name, network string) string {
	t.Helper()
	doc := fmt.Sprintf("name: %s\ndescription: a lab shell test's network.\nduration: 60s\nseed: 1\n", name)
	if network != "" {
		doc += "network:\n" + network
	}
	path := filepath.Join(t.TempDir(), name+".yaml")
	require.NoError(t, os.WriteFile(path, []byte(doc), 0o644))
	return path
}

// addShellTraffic appends a traffic list (YAML items under "traffic:") to
// the scenario file at path.
func addShellTraffic(t *testing.T, path, items string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("traffic:\n" + items)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// shellRunResult is one in-process run of lab shell.
type shellRunResult struct {
	exit           *cmdExit
	stdout, stderr string
	log            string
	started        shellStarted
}

// shellOpts sets a run's stdin (a string, or a file) and stdout (a file;
// default: captured), and a hook called once the pair exists, before CMD
// starts.
type shellOpts struct {
	stdin      string
	stdinFile  *os.File
	stdoutFile *os.File
	ready      func(shellStarted)
}

// runShell runs lab shell in this process with args and returns what CMD
// and the shell wrote.
func runShell(t *testing.T, o shellOpts, args ...string) shellRunResult {
	t.Helper()
	dir := t.TempDir()
	open := func(name string) *os.File {
		f, err := os.Create(filepath.Join(dir, name))
		require.NoError(t, err)
		t.Cleanup(func() { f.Close() })
		return f
	}
	stdin := o.stdinFile
	if stdin == nil {
		stdin = open("stdin")
		_, err := stdin.WriteString(o.stdin)
		require.NoError(t, err)
		_, err = stdin.Seek(0, io.SeekStart)
		require.NoError(t, err)
	}
	stdout, stderr := o.stdoutFile, open("stderr")
	if stdout == nil {
		stdout = open("stdout")
	}
	var log bytes.Buffer
	var res shellRunResult
	ex, err := shellRun(context.Background(), args, shellIO{stdin, stdout, stderr, &log}, func(st shellStarted) {
		res.started = st
		if o.ready != nil {
			o.ready(st)
		}
	})
	require.NoError(t, err, "lab shell's log:\n%s", log.String())
	require.NotNil(t, ex, "CMD ran")
	res.exit, res.log = ex, log.String()
	read := func(f *os.File) string {
		b, err := os.ReadFile(f.Name())
		require.NoError(t, err)
		return string(b)
	}
	if o.stdoutFile == nil {
		res.stdout = read(stdout)
	}
	res.stderr = read(stderr)
	return res
}

// requireCleanedUp checks that a pair's namespace and host device are gone.
func requireCleanedUp(t *testing.T, ns, dev string) {
	t.Helper()
	_, err := os.Stat("/run/netns/" + ns)
	require.ErrorIs(t, err, os.ErrNotExist, "namespace %s removed", ns)
	_, err = net.InterfaceByName(dev)
	require.Error(t, err, "device %s removed from the host", dev)
}

func ipForwardSetting(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_forward")
	require.NoError(t, err)
	return strings.TrimSpace(string(b))
}

// CMD gets the shell's standard streams and LAB_GATEWAY, the shell exits
// with CMD's status, and everything is gone afterwards; without CMD the
// user's shell runs.
func TestShellRunsCommand(t *testing.T) {
	requireShell(t)
	forward := ipForwardSetting(t)
	sc := shellScenario(t, "shell-plain", "  both: {delay: 5ms}\n")
	r := runShell(t, shellOpts{stdin: "hello\n"}, "-scenario", sc, "--", "sh", "-c",
		`read line; echo "out $line $LAB_GATEWAY $LAB_SCENARIO"; echo err >&2; exit 7`)
	gw := r.started.gateway.String()
	require.Equal(t, 7, r.exit.code)
	require.Equal(t, fmt.Sprintf("out hello %s shell-plain\n", gw), r.stdout)
	require.Equal(t, "err\n", r.stderr)
	require.Contains(t, r.log, "gateway "+gw+" on "+r.started.pair.DeviceB()+" (LAB_GATEWAY)")
	require.Contains(t, r.log, "CMD exited 7")
	requireCleanedUp(t, r.started.pair.NamespaceA(), r.started.pair.DeviceB())
	require.Equal(t, forward, ipForwardSetting(t), "net.ipv4.ip_forward unchanged")

	t.Setenv("SHELL", "/bin/sh")
	r = runShell(t, shellOpts{stdin: "echo in the shell $LAB_GATEWAY; exit 3\n"}, "-scenario", sc)
	require.Equal(t, 3, r.exit.code)
	require.Equal(t, "in the shell "+r.started.gateway.String()+"\n", r.stdout)
}

// shellHelperEnv makes the test binary, run as CMD inside a shell, do one
// small task there (TestShellHelper).
const shellHelperEnv = "LAB_SHELL_HELPER"

// TestShellHelper is what the test binary does when a shell runs it as CMD.
func TestShellHelper(t *testing.T) {
	switch os.Getenv(shellHelperEnv) {
	case "":
		t.Skip("run as CMD inside lab shell by TestShellIsNoWayOut")
	case "send-outside":
		// A datagram to an address outside the /30.
		c, err := net.Dial("udp4", "192.0.2.1:9")
		if err == nil {
			_, err = c.Write([]byte("out"))
			c.Close()
		}
		fmt.Printf("send to 192.0.2.1: %v\n", err)
		os.Exit(0)
	}
}

// From the shell, the gateway is reachable and nothing else: a packet to
// an address outside the gateway's subnet gets "network unreachable", the
// namespace's only route is the subnet's, and the host's forwarding is
// left as it was.
func TestShellIsNoWayOut(t *testing.T) {
	requireShell(t)
	forward := ipForwardSetting(t)
	sc := shellScenario(t, "shell-closed", "")
	t.Setenv(shellHelperEnv, "send-outside")
	r := runShell(t, shellOpts{}, "-scenario", sc, "--", "sh", "-c",
		`ip -4 route show; ip -4 route get 192.0.2.1; "$0" -test.run='^TestShellHelper$'`, os.Args[0])
	pair := r.started.pair
	subnet := netip.PrefixFrom(pair.AddrA(), 30).Masked()
	require.Equal(t, fmt.Sprintf("%v dev lab0 proto kernel scope link src %v \nsend to 192.0.2.1: dial udp4 192.0.2.1:9: connect: network is unreachable\n",
		subnet, pair.AddrA()), r.stdout)
	require.Equal(t, "RTNETLINK answers: Network is unreachable\n", r.stderr)
	require.Equal(t, forward, ipForwardSetting(t), "net.ipv4.ip_forward unchanged")
}

// Run as a user who is not root, the shell says in one line that it needs
// root, and why, and runs nothing.
func TestShellSaysWhyItCannotRun(t *testing.T) {
	requireShell(t)
	// The test binary, copied where an unprivileged user can run it.
	dir, err := os.MkdirTemp("", "lab-shell-nonroot") // t.TempDir's parent is the owner's only
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	bin := filepath.Join(dir, "lab.test")
	b, err := os.ReadFile(os.Args[0])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(bin, b, 0o755))
	cmd := shellChild(bin, "-scenario", "lan-animation", "--", "touch", filepath.Join(dir, "ran"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, shellFailed, ee.ExitCode())
	require.Equal(t, "lab: shell: kernel mode unavailable: needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN for namespaces and TUN devices), running as uid 65534\n",
		stderr.String())
	require.NoFileExists(t, filepath.Join(dir, "ran"))
}

// The shell's own failures have exit codes of their own, which CMD's
// cannot be mistaken for: 2 for its arguments, 127 for a CMD not found.
func TestShellExitCodes(t *testing.T) {
	requireShell(t)
	for want, args := range map[int][]string{
		2:             {"-scenario"},
		shellNotFound: {"-scenario", "lan-animation", "--", "no-such-command-anywhere"},
	} {
		cmd := shellChild(os.Args[0], args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "%v", args)
		require.Equal(t, want, ee.ExitCode(), "%v: %s", args, stderr.String())
	}
}

// shellChildEnv carries lab shell's arguments to the test binary run as
// the lab command (TestShellChild), one per line.
const shellChildEnv = "LAB_SHELL_CHILD_ARGS"

// TestShellChild is lab shell as a process of its own, as main runs it:
// the signal tests send it signals, and kill it.
func TestShellChild(t *testing.T) {
	args := os.Getenv(shellChildEnv)
	if args == "" {
		t.Skip("run by the shell's process tests as the lab command")
	}
	os.Exit(shellMain(strings.Split(args, "\n")))
}

// shellChild is the test binary bin running lab shell with args.
func shellChild(bin string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, "-test.run=^TestShellChild$")
	cmd.Env = append(os.Environ(), shellChildEnv+"="+strings.Join(args, "\n"))
	return cmd
}

// labProcess is a lab shell process started by startLab.
type labProcess struct {
	cmd      *exec.Cmd
	ns, dev  string
	childPID int // CMD's, which printed it first
	log      *bytes.Buffer
	logDone  chan struct{}
}

var bannerRE = regexp.MustCompile(`gateway \S+ on (\S+) \(LAB_GATEWAY\); \S+ runs in namespace (\S+) at`)

// startLab starts lab shell in a process of its own with the scenario and
// CMD; CMD must print its pid first (sh -c 'echo $$; ...'). It returns once
// the shell printed its banner and CMD its pid.
func startLab(t *testing.T, scenario string, cmdArgs ...string) *labProcess {
	t.Helper()
	cmd := shellChild(os.Args[0], append([]string{"-scenario", scenario, "--"}, cmdArgs...)...)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	lp := &labProcess{cmd: cmd, log: &bytes.Buffer{}, logDone: make(chan struct{})}
	banner := make(chan []string, 1)
	go func() {
		defer close(lp.logDone)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lp.log.WriteString(sc.Text() + "\n")
			if m := bannerRE.FindStringSubmatch(sc.Text()); m != nil {
				banner <- m
			}
		}
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "CMD printed its pid")
	lp.childPID, err = strconv.Atoi(strings.TrimSpace(line))
	require.NoError(t, err)
	m := <-banner // printed before CMD started
	lp.dev, lp.ns = m[1], m[2]
	go io.Copy(io.Discard, stdout)
	return lp
}

// wait waits for the lab process and returns its wait status and log. The
// log is read to its end first: Wait closes the pipes, and a last line not
// yet read would be lost.
func (lp *labProcess) wait(t *testing.T) (syscall.WaitStatus, string) {
	t.Helper()
	<-lp.logDone
	_ = lp.cmd.Wait()
	return lp.cmd.ProcessState.Sys().(syscall.WaitStatus), lp.log.String()
}

// gone tells whether a process has ended (and is not a zombie nobody
// reaped).
func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] == "Z"
}

// requireGoneSoon waits, bounded by 5 s, for a process that is not this
// one's child to end: its pidfd becomes readable when it exits.
func requireGoneSoon(t *testing.T, pid int) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return // already gone
	}
	require.NoError(t, err)
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 5000)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		require.NoError(t, err)
		require.Positive(t, n, "process %d still runs after 5 s", pid)
		return
	}
}

// The shell cleans up whatever ends it: a SIGTERM or SIGINT sent to it
// (passed on to CMD; the shell then ends by the same signal), CMD's crash
// (the shell exits 128+signal), and, when the shell itself is killed with
// SIGKILL, the next shell's start, which leaves a live shell alone.
func TestShellCleansUp(t *testing.T) {
	requireShell(t)
	sc := shellScenario(t, "shell-cleanup", "  both: {delay: 1ms}\n")
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(signalName(sig), func(t *testing.T) {
			lp := startLab(t, sc, "sh", "-c", "echo $$; exec sleep 60")
			require.NoError(t, lp.cmd.Process.Signal(sig))
			ws, log := lp.wait(t)
			require.True(t, ws.Signaled(), "the shell ends by CMD's signal: %v\n%s", ws, log)
			require.Equal(t, sig, ws.Signal())
			require.Contains(t, log, "CMD killed by "+signalName(sig))
			requireCleanedUp(t, lp.ns, lp.dev)
			require.True(t, gone(lp.childPID))
		})
	}
	t.Run("crash", func(t *testing.T) {
		lp := startLab(t, sc, "sh", "-c", "echo $$; kill -SEGV $$")
		ws, log := lp.wait(t)
		require.Equal(t, 128+int(syscall.SIGSEGV), ws.ExitStatus(), log)
		require.Contains(t, log, "CMD killed by SIGSEGV")
		requireCleanedUp(t, lp.ns, lp.dev)
	})
	t.Run("SIGKILL", func(t *testing.T) {
		live := startLab(t, sc, "sh", "-c", "echo $$; exec sleep 60")
		killed := startLab(t, sc, "sh", "-c", "echo $$; exec sleep 60")
		require.NoError(t, killed.cmd.Process.Kill())
		killed.wait(t)
		requireGoneSoon(t, killed.childPID) // CMD dies with the shell
		_, err := os.Stat("/run/netns/" + killed.ns)
		require.NoError(t, err, "nothing runs on SIGKILL: the namespace stays")
		_, err = net.InterfaceByName(killed.dev)
		require.Error(t, err, "the device went with the killed shell's file descriptors")

		next := startLab(t, sc, "sh", "-c", "echo $$")
		_, log := next.wait(t)
		require.Contains(t, log, "removed "+killed.ns+", left by a run that was killed")
		requireCleanedUp(t, killed.ns, killed.dev)
		_, err = os.Stat("/run/netns/" + live.ns)
		require.NoError(t, err, "a live shell's namespace is left alone")
		require.NoError(t, live.cmd.Process.Signal(syscall.SIGTERM))
		live.wait(t)
		requireCleanedUp(t, live.ns, live.dev)
	})
}
