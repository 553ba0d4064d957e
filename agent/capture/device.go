package capture

import (
	"sync"
	"time"
)

// Device is the lock of the shared graphics (D3D11) device. Desktop
// Duplication, the video processor that converts to NV12 and a Media
// Foundation hardware encoder all submit work on the same device, and the
// device is not free-threaded, so each holds this lock while it works: whoever
// holds it long makes the others wait (N6).
//
// It is a channel rather than a sync.Mutex so that a goroutine waiting for it
// is durably blocked in a testing/synctest bubble: the bubble's clock moves on
// while the holder sleeps out its modelled work, and the wait is exact. The
// zero value is an unlocked device. The channel is made on first use, so a
// Device declared outside a bubble can still be used inside one; a Device
// belongs to one bubble.
//
// Device implements sync.Locker, which is what the encoder models take.
type Device struct {
	once sync.Once
	ch   chan struct{}
}

var _ sync.Locker = (*Device)(nil)

// NewDevice returns an unlocked device.
func NewDevice() *Device { return &Device{} }

func (d *Device) slot() chan struct{} {
	d.once.Do(func() { d.ch = make(chan struct{}, 1) })
	return d.ch
}

// Lock waits until the device is free and takes it. Waiters take it in the
// order they came (a channel's senders queue in order).
func (d *Device) Lock() { d.slot() <- struct{}{} }

// Unlock frees the device. Unlocking a free device is a bug in the model and
// panics, as with sync.Mutex.
func (d *Device) Unlock() {
	select {
	case <-d.slot():
	default:
		panic("capture: Unlock of an unlocked Device")
	}
}

// TryLock takes the device if it is free and reports whether it did.
func (d *Device) TryLock() bool {
	select {
	case d.slot() <- struct{}{}:
		return true
	default:
		return false
	}
}

// Acquire locks the device and returns how long it waited for it, the figure
// the lab's ground truth records for every user of the device.
func (d *Device) Acquire() time.Duration {
	start := time.Now()
	d.Lock()
	return time.Since(start)
}
