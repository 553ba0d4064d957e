package ccgrid

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/internal/evidence"
	"github.com/nuvirahub/latencylab/lab"
)

// The reproduction table's N11 evidence quotes the reference run in
// testdata/ccgrid; when the run is made again, the quoted figures must
// follow, and its verdict must be what the table's class says.
func TestN11EvidenceQuotesTheReferenceRun(t *testing.T) {
	r, err := ReadReport(filepath.Join("..", "..", "testdata", "ccgrid", "ccgrid.json"))
	require.NoError(t, err)
	n, err := r.N11()
	require.NoError(t, err)
	findings, err := lab.Findings()
	require.NoError(t, err)
	i := slices.IndexFunc(findings, func(f lab.Finding) bool { return f.ID == "N11" })
	require.GreaterOrEqual(t, i, 0)
	f := findings[i]
	require.NotEmpty(t, f.Evidence)
	// Every figure of the evidence is the run's: the flows' length and
	// each controller's share of the link.
	p := evidence.For(t, "N11", "sudo go run ./cmd/lab ccgrid -n11-only")
	p.Figure(`\(testdata/ccgrid, (\d+) s flows\)`, r.Grid.Seconds)
	names := map[string]string{"bbr": "BBR", "cubic": "CUBIC", "reno": "Reno", QUICRow: `QUIC \(NewReno\)`}
	for cc, u := range n.Utilisation {
		p.Figure(names[cc]+` ([\d.]+)%`, 100*u)
	}
	p.Done()
	// CUBIC under half and Reno over it: half reproduces, the class "partly".
	require.False(t, n.Reproduced)
	require.Less(t, n.Utilisation["cubic"], 0.5)
	require.Greater(t, n.Utilisation["reno"], 0.5)
	require.Equal(t, lab.Partly, f.Class)
}
