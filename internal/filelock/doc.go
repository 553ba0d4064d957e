// Package filelock is an exclusive lock between processes on one machine:
// the lab takes it so that work several processes would each do at once
// (building a test binary, compiling the exact guest to machine code) is
// done by the first while the others wait, then find it done.
package filelock
