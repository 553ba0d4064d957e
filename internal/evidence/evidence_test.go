package evidence

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Figures are read as the docs write them; RFC references and names with
// digits are not figures.
func TestNumbers(t *testing.T) {
	var got []float64
	var dec []int
	for _, n := range Numbers("185 of 18 118 packets, 1.02% on N9's link (RFC 6143 7.7.4, x86), 2.95 Mbit/s") {
		got, dec = append(got, n.Value), append(dec, n.Decimals)
	}
	require.Equal(t, []float64{185, 18118, 1.02, 2.95}, got)
	require.Equal(t, []int{0, 0, 2, 2}, dec)
}

// A figure holds when the measurement, written with its decimals, is the
// figure; every number must be claimed.
func TestPin(t *testing.T) {
	p := Text(t, "t", "2.95 Mbit/s, mean 2 ms, 185 lost")
	p.Figure(`([\d.]+) Mbit/s`, 2.9506)
	p.Figure(`mean (\d+) ms`, 2.14)
	require.NoError(t, p.Mismatch())
	require.ErrorContains(t, p.Err(), "the figure 185")
	p.Figure(`(\d+) lost`, 186)
	require.ErrorContains(t, p.Err(), "says 185 where the test measures 186")

	q := Text(t, "t", "2.95 Mbit/s, 48.6%, within 1 ms")
	q.Within(`([\d.]+) Mbit/s`, 0.01, 2.966)
	q.Rule(`([\d.]+)%`, 38.7)
	q.AtMost(`within (\d+) ms`, 0.11)
	require.NoError(t, q.Err())

	r := Text(t, "t", "2.95 Mbit/s, 48.6%, within 1 ms")
	r.Within(`([\d.]+) Mbit/s`, 0.01, 3.0)
	r.Rule(`([\d.]+)%`, 34)
	r.AtMost(`within (\d+) ms`, 1.1)
	err := r.Err()
	require.ErrorContains(t, err, "more than 1% away")
	require.ErrorContains(t, err, "bound rule")
	require.ErrorContains(t, err, "says at most 1")
}
