package vnc

import (
	"math"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/internal/evidence"
	"github.com/nuvirahub/latencylab/lab/result"
)

// The reproduction table's N20 evidence quotes the glass-to-glass runs on
// the LAN kept in testdata/desktops; when they are made again, the quoted
// medians and their ranges must follow.
func TestN20EvidenceQuotesTheDesktopRuns(t *testing.T) {
	median := func(pair string) float64 {
		r, err := result.Read(filepath.Join("..", "..", "testdata", "desktops", "lan-animation-"+pair+"-seed1.json"))
		require.NoError(t, err)
		require.Equal(t, 10*time.Second, r.Duration)
		return float64(r.Summary.Latency.Median) / float64(time.Millisecond)
	}
	told := map[string]float64{"xrdp, FreeRDP": median("xrdp-xfreerdp"), "Xvnc, TigerVNC's viewer": median("xvnc-vncviewer"),
		"Xvnc, noVNC": median("xvnc-novnc")}
	polling := map[string]float64{"x11vnc, TigerVNC's viewer": median("x11vnc-vncviewer"), "x11vnc, noVNC": median("x11vnc-novnc")}
	p := evidence.For(t, "N20", "sudo go run ./cmd/lab desktop -scenario lan-animation -server xvnc -viewer vncviewer -duration 10s -out out/desktops")
	p.Figure(`(\d+) s of the mixed screen`, 10)
	span := func(m map[string]float64, pattern string) {
		lo, hi := math.Inf(1), math.Inf(-1)
		for name, v := range m {
			p.Figure(`([\d.]+) ms \(`+regexp.QuoteMeta(name)+`\)`, v)
			lo, hi = min(lo, v), max(hi, v)
		}
		p.Figure(pattern, math.Round(lo), math.Round(hi))
	}
	span(told, `: (\d+)-(\d+) ms;`)
	span(polling, `: (\d+)-(\d+) ms"?$`)
	p.Done()
}
