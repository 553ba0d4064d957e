// Package setup runs a set-up made of steps, each of which registers the
// clean-up of what it made as soon as it made it. A failure part-way, or a
// context ended between two steps, undoes exactly what was done, last made
// first; a set-up that succeeded is undone the same way when its user is
// done with it. The clean-ups' own errors are reported, never dropped.
package setup

import (
	"context"
	"fmt"
	"strings"
)

// Step is one part of a set-up.
type Step struct {
	// Name says what the step does ("create the pair"): an error of the
	// set-up names the step it stopped at.
	Name string
	// Do does it. Whatever it makes that must be undone it hands to
	// u.Add at once, before making the next thing, so that a failure later
	// in the same step undoes it too.
	Do func(ctx context.Context, u *Undo) error
}

// Undo holds the clean-ups a set-up registered.
type Undo struct {
	cleanups []cleanup
}

type cleanup struct {
	name string
	fn   func() error
}

// Add registers fn, which undoes something a step made; name says what it
// does ("remove the pair"), for its error.
func (u *Undo) Add(name string, fn func() error) {
	u.cleanups = append(u.cleanups, cleanup{name, fn})
}

// Run runs the clean-ups registered so far, the last first, each once: a
// second Run runs only those added since. Every clean-up runs whatever the
// others return; their errors come back together (nil when none failed),
// each named by its clean-up.
func (u *Undo) Run() error {
	var errs Errors
	for len(u.cleanups) > 0 {
		c := u.cleanups[len(u.cleanups)-1]
		u.cleanups = u.cleanups[:len(u.cleanups)-1]
		if err := c.fn(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.name, err))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// Errors are the errors of several clean-ups, on one line.
type Errors []error

func (e Errors) Error() string {
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

// Unwrap lets errors.Is and errors.As see each clean-up's error.
func (e Errors) Unwrap() []error { return e }

// Error is a set-up that stopped at a step: the step's error (or the
// context's cause, when it ended before the step began) and the errors of
// undoing what the steps before it did.
type Error struct {
	// Step names the step the set-up stopped at.
	Step string
	// Err is why it stopped.
	Err error
	// Cleanup is what failed in undoing the set-up (Errors); nil when
	// it was undone cleanly.
	Cleanup error
}

// Error is Err's message, which says what went wrong in the user's terms
// (the step's name is for callers that branch on it), and the clean-ups'
// errors after it.
func (e *Error) Error() string {
	if e.Cleanup == nil {
		return e.Err.Error()
	}
	return e.Err.Error() + "; undoing the set-up: " + e.Cleanup.Error()
}

// Unwrap lets errors.Is and errors.As see both the cause and the clean-ups'
// errors.
func (e *Error) Unwrap() []error {
	if e.Cleanup == nil {
		return []error{e.Err}
	}
	return []error{e.Err, e.Cleanup}
}

// Run runs steps in order and returns what undoes them all. It stops at
// the first step that fails, or when ctx has ended before a step begins
// (a set-up may take a while: the user can give up on it), undoes what was
// done and returns an *Error. A step that panics is undone too before the
// panic goes on.
func Run(ctx context.Context, steps []Step) (*Undo, error) {
	u := &Undo{}
	finished := false
	defer func() {
		if !finished {
			_ = u.Run() // a panic: the clean-ups' errors would hide it
		}
	}()
	for _, s := range steps {
		var stop error
		if cause := context.Cause(ctx); cause != nil {
			stop = fmt.Errorf("set-up ended before %s: %w", s.Name, cause)
		} else {
			stop = s.Do(ctx, u)
		}
		if stop != nil {
			finished = true
			return nil, &Error{Step: s.Name, Err: stop, Cleanup: u.Run()}
		}
	}
	finished = true
	return u, nil
}
