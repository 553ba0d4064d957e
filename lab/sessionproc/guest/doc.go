// Package guest is the program lab/exact compiles to WebAssembly: its
// test binary (only a test binary can open a synctest bubble) runs the
// sessions it reads on standard input and prints their results on
// standard output, when the environment variable GuestEnv is set. Run as
// a plain test, it serves one session natively through the same code and
// checks the answer.
//
// The package imports only what a session needs, so that an instance
// starts in a tenth of a second: every session gets a fresh one.
package guest

// GuestEnv, set in the environment, makes TestGuest serve.
const GuestEnv = "LATENCYLAB_EXACT_GUEST"

// ResultPrefix starts each result line the guest prints.
const ResultPrefix = "latencylab-session-result "
