package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/stratum-go/stratum/specs"
)

// cacheKeyPrefix names the rule below; a change of what goes into a key
// changes it, so entries written under an older rule are never read.
const cacheKeyPrefix = "stratum-cache-v2:"

// Cacheable reports whether a step's results are cached: it declares
// `cache: true`, or its function does. The validator admits cache only on
// compute-function steps without loops, accumulators or next.
func Cacheable(step *specs.Step) bool {
	return step != nil && (step.Cache || (step.Fn != nil && step.Fn.Cache))
}

// cacheKeyParts is what a result-cache key is the sha256 of: everything
// that decides what the step produces (its function or step id, mode,
// intent, command, model, output contract) and what its result is checked
// against (ensure, guardrails, output_schema), and the resolved inputs.
// The flow's name and the step's id are not in it: two steps that call the
// same function with the same inputs share an entry, in any flow.
type cacheKeyParts struct {
	Name       string         `json:"name"`
	Mode       specs.Mode     `json:"mode,omitempty"`
	Intent     string         `json:"intent,omitempty"`
	Command    *cacheCommand  `json:"command,omitempty"`
	Model      string         `json:"model,omitempty"`
	Contract   string         `json:"contract,omitempty"`
	Ensure     []string       `json:"ensure,omitempty"`
	Guardrails []string       `json:"guardrails,omitempty"`
	Schema     map[string]any `json:"output_schema,omitempty"`
	Inputs     map[string]any `json:"inputs"`
}

type cacheCommand struct {
	Shell string            `json:"shell,omitempty"`
	Argv  []string          `json:"argv,omitempty"`
	Dir   string            `json:"dir,omitempty"`
	Env   map[string]string `json:"env,omitempty"`
}

// CacheKey is the result-cache key of a cacheable step run with these
// resolved inputs: the one key rule of every driver — an agent driving
// the flow over MCP (the engine answers the step from the cache) and
// `stratum run` (its session and global caches). It is "" when the step
// is not cacheable or the inputs have no JSON (nothing is cached then).
func CacheKey(sp *specs.Spec, step *specs.Step, inputs map[string]any) string {
	if !Cacheable(step) {
		return ""
	}
	p := cacheKeyParts{Name: step.Function, Intent: step.Intent, Model: step.Model, Schema: step.OutputSchema, Inputs: inputs}
	if p.Name == "" {
		p.Name = "step:" + step.ID
	}
	if p.Inputs == nil {
		p.Inputs = map[string]any{}
	}
	if step.Fn != nil {
		p.Mode = step.Fn.Mode
	}
	c := step.Run
	if c == nil && step.Fn != nil {
		c = step.Fn.Run
	}
	if c != nil {
		p.Command = &cacheCommand{Shell: c.Shell, Argv: c.Argv, Dir: c.Dir, Env: c.Env}
	}
	if sp != nil {
		if con := sp.Contracts[step.OutputContract]; con != nil {
			p.Contract = con.Hash
		}
	}
	for _, e := range step.Ensure {
		if e != nil {
			p.Ensure = append(p.Ensure, e.Source)
		}
	}
	for _, g := range step.Guardrails {
		if g != nil {
			p.Guardrails = append(p.Guardrails, g.Pattern)
		}
	}
	b, err := json.Marshal(p)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return cacheKeyPrefix + hex.EncodeToString(sum[:])
}
