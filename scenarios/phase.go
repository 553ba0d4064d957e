package scenarios

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// phaseError finds the wrapped scenario's place in a loader error, and
// phaseOffset is how many lines come before the body in it.
var phaseError = regexp.MustCompile(`phase:(\d+): (?:network\.both(?:\[0\])?\.?)?`)

const phaseOffset = 5

// ParsePhase reads one phase of a network written as in a scenario file
// ({delay: 50ms, loss: 2%}), as lab proxy's API receives it, into a
// scenario of that one phase in both directions. It reads the phase
// through the scenario loader, so its mistakes are the loader's, but they
// speak of the body the user sent, not of the scenario it was wrapped in:
// "line N: delay: ..." with N counted in the body.
func ParsePhase(body []byte) (*Scenario, error) {
	doc := "name: api\ndescription: a phase sent to the proxy's API\nduration: 1s\nnetwork:\n  both:\n"
	for _, line := range strings.Split(strings.TrimRight(string(body), "\n"), "\n") {
		doc += "    " + line + "\n"
	}
	sc, err := Parse("phase", []byte(doc), nil)
	if err != nil {
		// A syntax error found at the end of the input is on the body's
		// last line.
		lines := strings.Count(strings.TrimRight(string(body), "\n"), "\n") + 1
		return nil, errors.New(phaseError.ReplaceAllStringFunc(err.Error(), func(m string) string {
			sub := phaseError.FindStringSubmatch(m)
			n, _ := strconv.Atoi(sub[1])
			return fmt.Sprintf("line %d: ", min(max(n-phaseOffset, 1), lines))
		}))
	}
	if len(sc.Network.Up) != 1 {
		return nil, errors.New("expected one phase, like {delay: 50ms, loss: 2%}")
	}
	return sc, nil
}
