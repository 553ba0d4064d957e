//go:build linux

package kernel

import (
	"os"
	"os/signal"
	"sync"

	"golang.org/x/sys/unix"
)

// While pairs exist, the package catches SIGINT and SIGTERM: namespaces
// outlive the process that made them, so an interrupted test run would
// otherwise leave them behind. On such a signal it closes every pair, stops
// catching, and raises the signal again: a program that does not handle it
// then ends as it would have, and one that does (signal.Notify of its own)
// receives it a second time, after the cleanup. When the last pair closes,
// the signals are no longer caught.
var live struct {
	sync.Mutex
	pairs map[*Pair]struct{}
	sigs  chan os.Signal
	stop  chan struct{}
}

// register records a pair being made, and starts catching signals with the
// first one. A pair whose program handles the signals itself
// (Config.OwnSignals) is not recorded.
func register(p *Pair) {
	if p.ownSignals {
		return
	}
	live.Lock()
	defer live.Unlock()
	if live.pairs == nil {
		live.pairs = map[*Pair]struct{}{}
	}
	live.pairs[p] = struct{}{}
	if live.sigs == nil {
		live.sigs = make(chan os.Signal, 1)
		live.stop = make(chan struct{})
		signal.Notify(live.sigs, unix.SIGINT, unix.SIGTERM)
		go watchSignals(live.sigs, live.stop)
	}
}

// unregister forgets a closed pair, and stops catching signals with the
// last one.
func unregister(p *Pair) {
	if p.ownSignals {
		return
	}
	live.Lock()
	defer live.Unlock()
	delete(live.pairs, p)
	if len(live.pairs) == 0 && live.sigs != nil {
		signal.Stop(live.sigs)
		close(live.stop)
		live.sigs, live.stop = nil, nil
	}
}

// watchSignals waits for a signal or for the last pair to close.
func watchSignals(sigs chan os.Signal, stop chan struct{}) {
	select {
	case <-stop:
		return
	case sig := <-sigs:
		live.Lock()
		pairs := make([]*Pair, 0, len(live.pairs))
		for p := range live.pairs {
			pairs = append(pairs, p)
		}
		live.Unlock()
		for _, p := range pairs {
			p.Close() // the last one stops the catching
		}
		// Close of the last pair called signal.Stop, so unless the
		// program catches it too, the signal's default action now ends
		// the process.
		if s, ok := sig.(unix.Signal); ok {
			_ = unix.Kill(os.Getpid(), s)
		}
	}
}
