package netem

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseTrace(t *testing.T) {
	tr, err := ParseTrace(strings.NewReader("1\n1\n3\n"), "hand")
	require.NoError(t, err)
	require.Equal(t, "hand", tr.Name)
	require.Equal(t, 3, tr.Opportunities())
	require.Equal(t, 3*time.Millisecond, tr.Period())
	require.InDelta(t, 3*1504*8/0.003, tr.AverageRate(), 1e-6)

	// The README's example: "1" is one packet a millisecond, 12 Mbit/s.
	tr, err = ParseTrace(strings.NewReader("1"), "one")
	require.NoError(t, err)
	require.InDelta(t, 12.032e6, tr.AverageRate(), 1e-6)
	require.Equal(t, "one (1 opportunities in 1ms, 12.032 Mbit/s)", tr.String())
}

func TestParseTraceToleratesTrailingBlankLinesAndSpaces(t *testing.T) {
	for _, in := range []string{"0\n5\n", "0\n5", "0\r\n5\r\n", " 0 \n\t5\n\n\n", "0\n5\n  \n"} {
		tr, err := ParseTrace(strings.NewReader(in), "t")
		require.NoError(t, err, "%q", in)
		require.Equal(t, []uint64{0, 5}, tr.ms, "%q", in)
	}
}

func TestParseTraceErrorsNameTheLine(t *testing.T) {
	for _, tc := range []struct {
		in   string
		line int
		want string
	}{
		{"1\n2\n5\n4\n", 4, "t:4: timestamp 4 is less than the previous one (5); timestamps never decrease"},
		{"", 0, "t: empty trace; expected one timestamp per line"},
		{"\n\n  \n", 0, "t: empty trace"},
		{"1\nabc\n", 2, `t:2: "abc" is not a number; expected one timestamp per line: a non-negative whole number of milliseconds`},
		{"1\n2.5\n", 2, `t:2: "2.5" is not a number`},
		{"1\n# comment\n", 2, `t:2: "# comment" is not a number`},
		{"1\n-3\n", 2, "t:2: timestamp -3 is negative"},
		{"1\n99999999999999999999999\n", 2, "t:2: timestamp 99999999999999999999999 is too large"},
		{"0\n0\n\n", 2, "t:2: last timestamp is 0: a trace repeats with a period of its last timestamp, which must be positive"},
		{"1\n2\n\n3\n", 3, "t:3: blank line between timestamps"},
		{"1\n" + strings.Repeat("9", 70000) + "\n", 2, "t:2: line too long"},
	} {
		_, err := ParseTrace(strings.NewReader(tc.in), "t")
		require.ErrorContains(t, err, tc.want, "%q", tc.in)
		var te *TraceError
		require.ErrorAs(t, err, &te)
		require.Equal(t, tc.line, te.Line, "%q", tc.in)
	}
}

func TestLoadTrace(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.trace")
	require.NoError(t, os.WriteFile(good, []byte("2\n4\n4\n10\n"), 0o644))
	tr, err := LoadTrace(good)
	require.NoError(t, err)
	require.Equal(t, good, tr.Name)
	require.Equal(t, 4, tr.Opportunities())

	bad := filepath.Join(dir, "bad.trace")
	require.NoError(t, os.WriteFile(bad, []byte("2\n4\n3\n"), 0o644))
	_, err = LoadTrace(bad)
	require.ErrorContains(t, err, bad+":3: timestamp 3 is less than the previous one (4)")

	_, err = LoadTrace(filepath.Join(dir, "missing.trace"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

func FuzzParseTrace(f *testing.F) {
	for _, s := range []string{
		"1\n", "1\n1\n3\n", "0\n0\n5\n", "5\n3\n", "", "\n", "abc", "-1\n", "1\r\n2\r\n",
		"1\n\n2\n", "0\n", "007\n8\n", " 4 \n", "18446744073709551616\n", "1\n2\n\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := ParseTrace(bytes.NewReader(data), "fuzz")
		if err != nil {
			require.Nil(t, tr)
			require.True(t, strings.HasPrefix(err.Error(), "fuzz"), "the error names the trace: %v", err)
			return
		}
		require.Positive(t, tr.Opportunities())
		require.Positive(t, tr.Period())
		require.Positive(t, tr.AverageRate())
		for i := 1; i < len(tr.ms); i++ {
			require.LessOrEqual(t, tr.ms[i-1], tr.ms[i])
		}
		require.Equal(t, time.Duration(tr.ms[len(tr.ms)-1])*time.Millisecond, tr.Period())

		var buf bytes.Buffer
		_, err = tr.WriteTo(&buf)
		require.NoError(t, err)
		again, err := ParseTrace(&buf, "fuzz")
		require.NoError(t, err)
		require.Equal(t, tr.ms, again.ms)
	})
}
