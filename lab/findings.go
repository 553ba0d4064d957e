package lab

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Finding is one row of the shared FINDINGS.md: an ID, what the write-up
// documents, and its figures.
type Finding struct {
	ID, Documented, Figures string
}

var findingRow = regexp.MustCompile(`^\|\s*([NE]\d+)\s*\|(.*)\|(.*)\|\s*$`)

// ParseFindings reads the finding tables of FINDINGS.md, in their order.
func ParseFindings(r io.Reader) ([]Finding, error) {
	var out []Finding
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		m := findingRow.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		out = append(out, Finding{ID: m[1], Documented: strings.TrimSpace(m[2]), Figures: strings.TrimSpace(m[3])})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("lab: no finding rows (| N1 | ... | ... |) found")
	}
	return out, nil
}

// LoadFindings reads ../shared/FINDINGS.md beside the module root.
func LoadFindings() ([]Finding, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	f, err := os.Open(filepath.Join(filepath.Dir(root), "shared", "FINDINGS.md"))
	if err != nil {
		return nil, fmt.Errorf("lab: %w (the shared folder lives beside the repository)", err)
	}
	defer f.Close()
	return ParseFindings(f)
}
