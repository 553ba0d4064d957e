// Package capture owns the model of screen capture on the controlled PC:
// Desktop Duplication taking the newest image of a screen model, the colour
// conversion to NV12 (N4), and the shared graphics device lock they and a
// hardware encoder hold (N6).
//
// Polling is the caller's loop (at the display refresh, 60 Hz by default):
// each Grab returns the newest image if the content changed since the last
// one taken, else nothing, at once. Behind OldWaitForFrame is the documented
// old behaviour: Grab waits up to 100 ms for a new image while holding the
// device lock, so that conversion and encoding, which need the lock, queue
// behind it.
//
// Every call takes its modelled time by sleeping, so inside a
// testing/synctest bubble the durations are exact, and reports the true
// instants the lab's ground truth records.
package capture

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/nuvirahub/latencylab/agent/screen"
	"github.com/nuvirahub/latencylab/internal/seeded"
)

// Defaults of Config.
const (
	// DefaultCopy is what taking a new image costs while holding the
	// device: AcquireNextFrame returning a frame and the copy of the desktop
	// texture on the GPU. The write-up gives no figure; a 1080p texture copy
	// on the GPU is well under a millisecond, so this is a parameter that
	// only has to stay small next to the 1 ms conversion (N4).
	DefaultCopy = 500 * time.Microsecond
	// DefaultWaitTimeout is how long the old capture waited for a new image
	// (AcquireNextFrame's timeout), holding the lock (N6: up to 100 ms).
	DefaultWaitTimeout = 100 * time.Millisecond
	// DefaultGPUConvert is the colour conversion to NV12 on the GPU's video
	// processor (N4: about 1 ms).
	DefaultGPUConvert = time.Millisecond
	// DefaultCPUConvertMin and DefaultCPUConvertMax bound the conversion on
	// the processor, drawn uniformly (N4: 3-4 ms).
	DefaultCPUConvertMin = 3 * time.Millisecond
	DefaultCPUConvertMax = 4 * time.Millisecond
)

// Config describes a capturer. The zero value of every field but Screen
// means its documented default; durations that may be wanted as zero take a
// negative value for "none".
type Config struct {
	// Name names the capturer's random source (with the run's seed); empty
	// means "capture".
	Name string
	// Screen is what is captured. Required.
	Screen screen.Screen
	// Device is the shared graphics device; nil means one of its own (no
	// one else contends for it).
	Device *Device
	// Epoch is the session's start, the instant the screen's times count
	// from; zero means the instant New is called.
	Epoch time.Time
	// Copy is the time a Grab that takes a new image holds the device;
	// zero means DefaultCopy, negative means none.
	Copy time.Duration
	// OldWaitForFrame restores the documented old behaviour (N6): when
	// nothing is new, Grab waits for a new image, up to WaitTimeout, while
	// holding the device lock. Off (the fix), Grab never waits.
	OldWaitForFrame bool
	// WaitTimeout is the old Grab's longest wait; zero means
	// DefaultWaitTimeout.
	WaitTimeout time.Duration
	// ConvertOnCPU converts to NV12 on the processor (3-4 ms, no device
	// lock) instead of on the GPU (about 1 ms, holding the device) (N4).
	ConvertOnCPU bool
	// GPUConvert is the GPU conversion's time; zero means
	// DefaultGPUConvert, negative means none.
	GPUConvert time.Duration
	// CPUConvertMin and CPUConvertMax bound the CPU conversion's time,
	// drawn uniformly from the capturer's seeded source; zero means the
	// defaults (3 ms and 4 ms).
	CPUConvertMin, CPUConvertMax time.Duration
}

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("capture: bad configuration")

// Frame is what one Grab saw.
type Frame struct {
	// New tells whether a new image was taken. When false, nothing changed
	// since the last image taken: Image is that image and Delta is empty.
	New bool
	// Image is the newest image taken (its At is when the content appeared,
	// from the session start).
	Image screen.Image
	// Delta is what changed since the image taken before (or since the
	// version given to Rewind): what the encoder must send.
	Delta screen.Delta
	// Start and End are the true instants of the call.
	Start, End time.Time
	// LockWait is how long the call waited for the device lock.
	LockWait time.Duration
	// Waited is how long the call waited for a new image while holding the
	// lock (the old behaviour; always zero with the fix).
	Waited time.Duration
}

// Conversion is what one colour conversion to NV12 cost.
type Conversion struct {
	// Start and End are the true instants of the call.
	Start, End time.Time
	// LockWait is how long it waited for the device lock (zero on the CPU).
	LockWait time.Duration
	// OnGPU tells where the conversion ran.
	OnGPU bool
}

// Capturer takes images of a screen. Grab and Rewind belong to the capture
// loop's goroutine; Convert may be called from another (the encoding side of
// a pipeline).
type Capturer struct {
	scr          screen.Screen
	dev          *Device
	epoch        time.Time
	copy         time.Duration
	old          bool
	timeout      time.Duration
	cpu          bool
	gpu          time.Duration
	cpuLo, cpuHi time.Duration

	last screen.Image // the newest image taken

	mu  sync.Mutex // guards rng; never held across a sleep
	rng *rand.Rand
}

func positive(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

// New makes a capturer of cfg whose random draws come from a source seeded
// by seed and cfg.Name.
func New(seed uint64, cfg Config) (*Capturer, error) {
	if cfg.Screen == nil {
		return nil, fmt.Errorf("%w: no screen", ErrConfig)
	}
	if cfg.Name == "" {
		cfg.Name = "capture"
	}
	c := &Capturer{
		scr:     cfg.Screen,
		dev:     cfg.Device,
		epoch:   cfg.Epoch,
		copy:    positive(cfg.Copy, DefaultCopy),
		old:     cfg.OldWaitForFrame,
		timeout: cfg.WaitTimeout,
		cpu:     cfg.ConvertOnCPU,
		gpu:     positive(cfg.GPUConvert, DefaultGPUConvert),
		cpuLo:   cfg.CPUConvertMin,
		cpuHi:   cfg.CPUConvertMax,
		rng:     seeded.New(seed, cfg.Name, "convert"),
	}
	if c.dev == nil {
		c.dev = NewDevice()
	}
	if c.epoch.IsZero() {
		c.epoch = time.Now()
	}
	if c.timeout == 0 {
		c.timeout = DefaultWaitTimeout
	}
	if c.cpuLo == 0 {
		c.cpuLo = DefaultCPUConvertMin
	}
	if c.cpuHi == 0 {
		c.cpuHi = max(DefaultCPUConvertMax, c.cpuLo)
	}
	if c.timeout < 0 {
		return nil, fmt.Errorf("%w: negative wait timeout %v", ErrConfig, c.timeout)
	}
	if c.cpuLo < 0 || c.cpuHi < c.cpuLo {
		return nil, fmt.Errorf("%w: CPU conversion [%v, %v]: need 0 <= min <= max", ErrConfig, c.cpuLo, c.cpuHi)
	}
	return c, nil
}

// Epoch returns the session's start, the instant screen times count from.
func (c *Capturer) Epoch() time.Time { return c.epoch }

// Device returns the device the capturer locks, to share with a hardware
// encoder.
func (c *Capturer) Device() *Device { return c.dev }

// Last returns the newest image taken (version 0 before the first Grab).
func (c *Capturer) Last() screen.Image { return c.last }

// Rewind makes the next Grab report the changes since version v instead of
// since the last image taken: for a pipeline that took an image and then
// dropped it without encoding, so the encoder still needs its changes. The
// next Grab counts as new if the screen has anything newer than v.
func (c *Capturer) Rewind(v uint64) {
	c.last = screen.Image{Version: v}
}

// Grab takes the newest image if the content changed since the last image
// taken. With the fix it returns at once when nothing is new; a new image
// costs Copy, holding the device. With OldWaitForFrame it waits, holding the
// device, until a new image appears or WaitTimeout passes.
func (c *Capturer) Grab() Frame {
	f := Frame{Start: time.Now()}
	c.dev.Lock()
	locked := time.Now()
	f.LockWait = locked.Sub(f.Start)

	img, d := c.scr.Since(c.last.Version, locked.Sub(c.epoch))
	if c.old && img.Version <= c.last.Version {
		// AcquireNextFrame(timeout): the call returns when the compositor
		// presents a new image or the timeout ends, and the device stays
		// locked all along.
		wake := locked.Add(c.timeout)
		if next, ok := c.scr.Next(locked.Sub(c.epoch)); ok && !c.epoch.Add(next).After(wake) {
			wake = c.epoch.Add(next)
		}
		time.Sleep(wake.Sub(locked))
		f.Waited = time.Since(locked)
		img, d = c.scr.Since(c.last.Version, time.Since(c.epoch))
	}
	if img.Version > c.last.Version {
		time.Sleep(c.copy)
		f.New = true
		c.last = img
	} else {
		img, d = c.last, screen.Delta{From: c.last.Version, To: c.last.Version}
	}
	c.dev.Unlock()
	f.Image, f.Delta, f.End = img, d, time.Now()
	return f
}

// Convert converts the image taken to NV12, on the GPU holding the device
// (about 1 ms) or on the processor without it (3-4 ms), and takes that time.
func (c *Capturer) Convert() Conversion {
	cv := Conversion{Start: time.Now(), OnGPU: !c.cpu}
	if c.cpu {
		c.mu.Lock()
		d := c.cpuLo + time.Duration(c.rng.Int64N(int64(c.cpuHi-c.cpuLo)+1))
		c.mu.Unlock()
		time.Sleep(d)
	} else {
		cv.LockWait = c.dev.Acquire()
		time.Sleep(c.gpu)
		c.dev.Unlock()
	}
	cv.End = time.Now()
	return cv
}
