package run

import (
	"fmt"
	"sort"

	"github.com/stratum-go/stratum/specs"
)

// Needs is what running a spec's flows with `stratum run` calls beside its
// commands, by the runner's rule for each step (kindOf): the agent CLIs of
// its agent steps, the models its infer steps name, and where an infer
// step names none (it takes the default model). Each is mapped to the
// first place that needs it ("FILE: step ID").
type Needs struct {
	Agents  map[string]string
	Models  map[string]string
	Default string // "" when every infer step names its model
}

// Add adds what the flows of sp need to n (nil maps are made).
func (n *Needs) Add(sp *specs.Spec) {
	if n.Agents == nil {
		n.Agents, n.Models = map[string]string{}, map[string]string{}
	}
	names := make([]string, 0, len(sp.Flows))
	for name := range sp.Flows {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, st := range sp.Flows[name].Steps {
			if st.IsGate() {
				continue // decided by a person or a policy, never executed
			}
			where := fmt.Sprintf("%s: step %s", sp.File, st.ID)
			switch kindOf(st) {
			case execAgent:
				if _, ok := n.Agents[st.Agent]; !ok {
					n.Agents[st.Agent] = where
				}
			case execInfer:
				model := st.Model
				if model == "" && st.Fn != nil {
					model = st.Fn.Model
				}
				switch {
				case model != "":
					if _, ok := n.Models[model]; !ok {
						n.Models[model] = where
					}
				case n.Default == "":
					n.Default = where
				}
			}
		}
	}
}
