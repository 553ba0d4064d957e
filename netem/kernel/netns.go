//go:build linux

package kernel

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Namespaces and addresses are set up with iproute2's `ip`, run through
// os/exec: it is on every machine that can run kernel mode, `ip netns add`
// makes the bind mount under /run/netns that `ip netns exec` (and so iperf3
// and any other program) understands, and it spares the module a netlink
// dependency. The TUN devices and the namespace switches, which must happen
// on a given thread, use x/sys/unix directly.

// namePrefix starts the name of every namespace this package makes:
// lab-<pid>-<n>-a and -b.
const namePrefix = "lab-"

// netnsDir is where `ip netns` keeps its named namespaces.
const netnsDir = "/run/netns"

// ErrUnavailable is wrapped by the errors of Available and
// ControllerAvailable: kernel mode cannot run here.
var ErrUnavailable = errors.New("kernel mode unavailable")

// ipCommand finds iproute2's ip, which is often outside a non-root PATH.
func ipCommand() (string, error) {
	if p, err := exec.LookPath("ip"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: iproute2's ip command not found", ErrUnavailable)
}

// Available reports why kernel mode cannot run here, or nil when it can:
// it needs root and /dev/net/tun, and the ip command.
func Available() error {
	if uid := os.Geteuid(); uid != 0 {
		return fmt.Errorf("%w: needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN for namespaces and TUN devices), running as uid %d", ErrUnavailable, uid)
	}
	f, err := os.OpenFile("/dev/net/tun", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("%w: cannot open /dev/net/tun: %v", ErrUnavailable, err)
	}
	f.Close()
	_, err = ipCommand()
	return err
}

// ControllerAvailable reports whether the kernel offers TCP congestion
// controller name (bbr, cubic, reno...), as
// net.ipv4.tcp_available_congestion_control lists them.
func ControllerAvailable(name string) error {
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
	if err != nil {
		return fmt.Errorf("%w: cannot read the available congestion controllers: %v", ErrUnavailable, err)
	}
	list := strings.Fields(string(b))
	for _, c := range list {
		if c == name {
			return nil
		}
	}
	return fmt.Errorf("%w: TCP congestion controller %q not in net.ipv4.tcp_available_congestion_control (%s); try modprobe tcp_%s",
		ErrUnavailable, name, strings.Join(list, " "), name)
}

// runIP runs ip with args, feeding it stdin when not empty.
func runIP(stdin string, args ...string) error {
	ip, err := ipCommand()
	if err != nil {
		return err
	}
	cmd := exec.Command(ip, args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kernel: ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return nil
}

func addNamespace(name string) error { return runIP("", "netns", "add", name) }

func delNamespace(name string) error { return runIP("", "netns", "del", name) }

// txQueueLen is the TUN devices' queue, in packets, in front of the
// reader that hands packets to a link. It holds anything only when the
// reader falls behind, on a busy machine: 500, the kernel's default for
// TUN, is 100 ms of 100-byte packets at 4 Mbit/s, and a longer stall would
// drop packets before they reached the link, where no counter sees them.
// Longer, such a stall delays them instead.
const txQueueLen = 10000

// configure brings up loopback and the TUN device in namespace ns and gives
// the device its address, in one ip process; ns "" is the process's own
// namespace (the host's), whose loopback is left as it is. The device gets
// no IPv6 link-local address (addrgenmode none), so the only traffic on the
// links is what the lab sends, not router solicitations.
func configure(ns, dev string, addr netip.Addr, mtu int) error {
	script := fmt.Sprintf("link set dev %[1]s addrgenmode none\n"+
		"link set dev %[1]s mtu %[2]d txqueuelen %[4]d up\n"+
		"addr add %[3]s/30 dev %[1]s\n", dev, mtu, addr, txQueueLen)
	if ns == "" {
		return runIP(script, "-batch", "-")
	}
	return runIP("link set dev lo up\n"+script, "-n", ns, "-batch", "-")
}

// openTUN creates TUN device dev inside namespace ns ("" for the process's
// own; a device is created in the namespace of the thread that asks for
// it) and returns it as a file in non-blocking mode, so that reads wait in
// the runtime's poller and Close wakes them, with the device's name: dev
// may be a pattern like "labgw%d", which the kernel completes with the
// first free number.
func openTUN(ns, dev string) (f *os.File, name string, err error) {
	open := func() error {
		fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != nil {
			return fmt.Errorf("kernel: open /dev/net/tun: %w", err)
		}
		ifr, err := unix.NewIfreq(dev)
		if err != nil {
			unix.Close(fd)
			return fmt.Errorf("kernel: TUN name %q: %w", dev, err)
		}
		// IFF_NO_PI: reads and writes are bare IP packets, with no
		// 4-byte protocol header in front.
		ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
		if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
			unix.Close(fd)
			return fmt.Errorf("kernel: TUNSETIFF %s in %s: %w", dev, namespaceName(ns), err)
		}
		name = ifr.Name()
		f = os.NewFile(uintptr(fd), "tun:"+namespaceName(ns)+"/"+name)
		return nil
	}
	if ns == "" {
		err = open()
	} else {
		err = inNamespace(ns, open)
	}
	return f, name, err
}

// namespaceName names namespace ns in messages: "" is the host's.
func namespaceName(ns string) string {
	if ns == "" {
		return "the host's namespace"
	}
	return ns
}

// inNamespace runs fn on an OS thread switched into the named network
// namespace. The thread is never switched back: the goroutine ends while
// still locked to it, and the runtime then ends the thread instead of
// handing it to other goroutines, so no goroutine can ever run by accident
// in a namespace it did not ask for (even if fn leaves it in another).
func inNamespace(name string, fn func() error) error {
	ns, err := os.Open(filepath.Join(netnsDir, name))
	if err != nil {
		return fmt.Errorf("kernel: namespace %s: %w", name, err)
	}
	defer ns.Close()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("kernel: setns %s: %w", name, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// Sweep removes the namespaces that processes which no longer exist left
// behind, as after a SIGKILL, which no handler can catch. Namespaces of live
// processes, this one included, are left alone, so Sweep is safe while
// other runs go on in parallel. It returns the names it removed.
func Sweep() ([]string, error) {
	entries, err := os.ReadDir(netnsDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("kernel: sweep: %w", err)
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		pid, ok := ownerPID(e.Name())
		if !ok || unix.Kill(pid, 0) != unix.ESRCH {
			continue
		}
		if err := delNamespace(e.Name()); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, e.Name())
	}
	return removed, errors.Join(errs...)
}

// ownerPID parses the process id out of a name lab-<pid>-<n>-<a|b>.
func ownerPID(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, namePrefix)
	if !ok {
		return 0, false
	}
	parts := strings.Split(rest, "-")
	if len(parts) != 3 || (parts[2] != "a" && parts[2] != "b") {
		return 0, false
	}
	pid, err := strconv.Atoi(parts[0])
	if err != nil || pid <= 0 {
		return 0, false
	}
	if _, err := strconv.Atoi(parts[1]); err != nil {
		return 0, false
	}
	return pid, true
}
