package netem

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// TraceMTU is the size of one delivery opportunity in a mahimahi trace: the
// largest packet mahimahi's TUN device carries.
const TraceMTU = 1504

// maxTraceMillis bounds a timestamp so that instants computed from a trace
// (period times loops, in nanoseconds) stay far from overflow: about 31 years.
const maxTraceMillis = 1_000_000_000_000

// Trace is a link capacity recorded in the mahimahi trace format: a list of
// delivery opportunities, each the chance to send TraceMTU bytes, at whole
// milliseconds from the start of the trace. The trace repeats with a period
// equal to its last timestamp.
//
// The format is one non-negative integer per line. Timestamps never decrease;
// several opportunities in one millisecond repeat the number. Leading and
// trailing spaces (and a carriage return) on a line are ignored, and so are
// blank lines at the end of the file, which editors and scripts leave behind;
// a blank line followed by more timestamps is an error, since it more likely
// marks a damaged or concatenated file than a deliberate gap.
type Trace struct {
	// Name identifies the trace in errors and reports: the file's path for
	// LoadTrace.
	Name string
	ms   []uint64 // opportunities, non-decreasing; the last is the period
}

// TraceError is a malformed trace. It names the trace and, for a problem on
// one line, the line.
type TraceError struct {
	Name string // the trace's name, for a file its path
	Line int    // 1-based; 0 for a problem with the whole trace
	Msg  string // what is wrong and what was expected
}

// Error formats the problem as file:line: message, as compilers do, so that
// editors can jump to it.
func (e *TraceError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Name, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Name, e.Msg)
}

// LoadTrace reads the mahimahi trace in the file at path.
func LoadTrace(path string) (*Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("netem: trace: %w", err)
	}
	defer f.Close()
	return ParseTrace(f, path)
}

// ParseTrace reads a mahimahi trace from r; name (typically the file's path)
// is used in errors and as the trace's Name. Errors are *TraceError, except
// failures to read r.
func ParseTrace(r io.Reader, name string) (*Trace, error) {
	const expect = "expected one timestamp per line: a non-negative whole number of milliseconds"
	t := &Trace{Name: name}
	sc := bufio.NewScanner(r)
	line, blank, last := 0, 0, 0 // blank: the first blank line since the timestamp on line last
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			if blank == 0 {
				blank = line
			}
			continue
		}
		if blank != 0 {
			return nil, &TraceError{Name: name, Line: blank, Msg: "blank line between timestamps; " + expect}
		}
		ms, err := strconv.ParseUint(text, 10, 64)
		if err != nil || ms > maxTraceMillis {
			switch {
			case strings.HasPrefix(text, "-") && isDigits(text[1:]):
				return nil, &TraceError{Name: name, Line: line, Msg: fmt.Sprintf("timestamp %s is negative; %s", text, expect)}
			case isDigits(text):
				return nil, &TraceError{Name: name, Line: line, Msg: fmt.Sprintf("timestamp %s is too large (at most %d ms)", text, uint64(maxTraceMillis))}
			}
			return nil, &TraceError{Name: name, Line: line, Msg: fmt.Sprintf("%q is not a number; %s", shorten(text), expect)}
		}
		if n := len(t.ms); n > 0 && ms < t.ms[n-1] {
			return nil, &TraceError{Name: name, Line: line, Msg: fmt.Sprintf(
				"timestamp %d is less than the previous one (%d); timestamps never decrease", ms, t.ms[n-1])}
		}
		t.ms = append(t.ms, ms)
		last = line
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &TraceError{Name: name, Line: line + 1, Msg: "line too long; " + expect}
		}
		return nil, fmt.Errorf("netem: trace %s: %w", name, err)
	}
	if len(t.ms) == 0 {
		return nil, &TraceError{Name: name, Msg: "empty trace; " + expect}
	}
	if t.ms[len(t.ms)-1] == 0 {
		return nil, &TraceError{Name: name, Line: last, Msg: "last timestamp is 0: a trace repeats with a period of its last timestamp, which must be positive"}
	}
	return t, nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// shorten keeps error messages readable when a binary file is read as a
// trace.
func shorten(s string) string {
	const max = 40
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}

// Period is the trace's length: its last timestamp, after which it repeats.
func (t *Trace) Period() time.Duration {
	return time.Duration(t.ms[len(t.ms)-1]) * time.Millisecond
}

// Opportunities is the number of delivery opportunities in one period (the
// number of lines).
func (t *Trace) Opportunities() int { return len(t.ms) }

// AverageRate is the capacity the trace offers on average, in bits per
// second: every opportunity carries TraceMTU bytes.
func (t *Trace) AverageRate() float64 {
	return float64(len(t.ms)) * TraceMTU * 8 / t.Period().Seconds()
}

// WriteTo writes the trace in the mahimahi format, one timestamp per line;
// parsing the output gives the same trace.
func (t *Trace) WriteTo(w io.Writer) (int64, error) {
	var buf bytes.Buffer
	var num [20]byte
	for _, ms := range t.ms {
		buf.Write(strconv.AppendUint(num[:0], ms, 10))
		buf.WriteByte('\n')
	}
	return buf.WriteTo(w)
}

// String names the trace and sums it up.
func (t *Trace) String() string {
	return fmt.Sprintf("%s (%d opportunities in %v, %.3f Mbit/s)", t.Name, len(t.ms), t.Period(), t.AverageRate()/1e6)
}
