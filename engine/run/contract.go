package run

import (
	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/specs"
)

// contractError checks what a command or an agent returned against the
// step's output contract — the function's `output`, or an inline step's
// `output_contract` — as the seeds define contracts: a result that does
// not fit is a failed attempt, retried with exactly these violations. LLM
// (infer) steps are checked by their executor already. Over MCP the
// engine keeps the original server's acceptance (it checks output_schema,
// not the contract), so this check belongs to the in-process runner.
func contractError(sp *specs.Spec, step *specs.Step, kind executorKind, output any) error {
	if kind != execCommand && kind != execAgent || sp == nil || step.OutputContract == "" {
		return nil
	}
	c := sp.Contracts[step.OutputContract]
	if c == nil || c.Schema == nil {
		return nil
	}
	s, err := specs.NewSchema(c.Schema)
	if err != nil {
		return nil // the validator compiled every contract; nothing to check against
	}
	vs := s.Validate(output)
	if len(vs) == 0 {
		return nil
	}
	for i, v := range vs {
		vs[i] = "output contract '" + c.Name + "' violation: " + v
	}
	return &engine.AttemptError{Kind: engine.AttemptContract, Violations: vs}
}
