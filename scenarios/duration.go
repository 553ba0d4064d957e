package scenarios

import (
	"slices"
	"time"
)

// WithDuration returns a copy of s that lasts d (lab run -duration), s
// itself unchanged: the library's scenarios are shared. The expectations
// keep the windows they were written for, a window left open to the end
// closed at s's own end, because a bound is about that window: a band was
// measured over it, and a median over the first 2 s of a 20 s window is
// another figure. The lab leaves an expectation whose window a shorter run
// does not cover unjudged, and judges the rest as written. The copy is
// validated as Validate does, but for the expectations' windows, which
// may now end after it.
func (s *Scenario) WithDuration(d time.Duration) (*Scenario, error) {
	c := *s
	c.Duration = d
	c.Expect = nil
	if err := c.Validate(); err != nil {
		return nil, err
	}
	c.Expect = slices.Clone(s.Expect)
	for i := range c.Expect {
		e := &c.Expect[i]
		if e.To == 0 && e.At == 0 {
			e.To = s.Duration
		}
	}
	return &c, nil
}
