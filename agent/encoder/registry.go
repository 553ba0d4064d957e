package encoder

import (
	"fmt"
	"slices"
	"sync"
)

// Factory builds the encoder of a registered preset from a Config: the
// preset's name and whatever the caller set on it (the starting Bitrate, the
// switches). It returns a configuration error (wrapping ErrConfig) for a
// field its encoder cannot honour.
type Factory func(seed uint64, cfg Config) (Encoder, error)

// registered holds the presets other packages add with Register: encoders
// that are not the H.264 model (the real lossless codecs of
// agent/encoder/lossless), which this package cannot import without a
// cycle, since they implement its interface. It is written from init
// functions and read afterwards; the lock keeps a Register made later (by
// a test) safe beside the readers.
var registered = struct {
	sync.RWMutex
	m map[string]Factory
}{m: map[string]Factory{}}

// Register adds a software encoder preset that f builds, so that the name
// works wherever presets are chosen by name (Preset, PresetNames, Make, a
// scenario's agent.encoder). It is meant for init functions, as
// database/sql drivers register: the preset exists in a program that links
// the package that registers it. It panics on an empty name, a nil factory
// or a name already taken, which are programming errors.
func Register(name string, f Factory) {
	registered.Lock()
	defer registered.Unlock()
	if name == "" || f == nil {
		panic("encoder: Register needs a name and a factory")
	}
	if _, dup := presets[name]; dup {
		panic(fmt.Sprintf("encoder: Register: %q is an H.264 preset", name))
	}
	if _, dup := registered.m[name]; dup {
		panic(fmt.Sprintf("encoder: Register: %q registered twice", name))
	}
	registered.m[name] = f
}

func factory(name string) (Factory, bool) {
	registered.RLock()
	defer registered.RUnlock()
	f, ok := registered.m[name]
	return f, ok
}

func registeredNames() []string {
	registered.RLock()
	defer registered.RUnlock()
	names := make([]string, 0, len(registered.m))
	for n := range registered.m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Make builds the encoder cfg describes: the registered encoder of that
// name (see Register), or else the H.264 model (New). The agent builds its
// encoders through it, so a preset chosen by name is whichever encoder
// registered it.
func Make(seed uint64, cfg Config) (Encoder, error) {
	if f, ok := factory(cfg.Name); ok {
		return f(seed, cfg)
	}
	return New(seed, cfg)
}
