// Package seeded derives the lab's random sources. Every random decision in a
// run draws from a *rand.Rand made here from the run's seed and the name of the
// component that decides, so that adding a component never shifts the random
// sequence of another and the same seed always gives the same run.
package seeded

import (
	"hash/fnv"
	"math/rand/v2"
)

// New returns a source for the component called by the joined names (for
// example "uplink", "loss", "0") under the run's seed.
func New(seed uint64, names ...string) *rand.Rand {
	h := fnv.New64a()
	for _, n := range names {
		h.Write([]byte(n))
		h.Write([]byte{0}) // separator, so ("ab","c") differs from ("a","bc")
	}
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}
