package plan

import (
	"fmt"

	"github.com/nuvirahub/latencylab/lab/laberr"
	"github.com/nuvirahub/latencylab/lab/transport"
	"github.com/nuvirahub/latencylab/netem/nat"
	"github.com/nuvirahub/latencylab/scenarios"
)

// natPresets are the routers a scenario names (scenarios.NATs).
var natPresets = map[string]nat.Config{
	"full-cone":            nat.FullCone,
	"restricted-cone":      nat.RestrictedCone,
	"port-restricted-cone": nat.PortRestrictedCone,
	"symmetric":            nat.Symmetric,
}

// convertPath turns a scenario's path into the session's topology.
func convertPath(sp scenarios.Path) (*transport.Topology, error) {
	router := func(field, name string) (*nat.Config, error) {
		if name == "" || name == "none" {
			return nil, nil
		}
		c, ok := natPresets[name]
		if !ok {
			return nil, fmt.Errorf("%w: path.%s: unknown router %q", laberr.ErrScenario, field, name)
		}
		return &c, nil
	}
	p := &transport.Topology{Connect: sp.Connect, SameRouter: sp.SameRouter, RelayDelay: sp.RelayDelay,
		IgnoreLANCandidates: sp.IgnoreLANCandidates, ForceRelay: sp.ForceRelay}
	var err error
	if p.AgentNAT, err = router("agent_nat", sp.AgentNAT); err != nil {
		return nil, err
	}
	if p.ViewerNAT, err = router("viewer_nat", sp.ViewerNAT); err != nil {
		return nil, err
	}
	if _, err := p.Strategy(); err != nil {
		return nil, err
	}
	return p, nil
}
