package run

import (
	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/internal/contract"
	"github.com/stratum-go/stratum/specs"
)

// contractError checks what an executor returned — an LLM's answer, a
// command's or an agent's result — against the step's output contract
// (the function's `output`, or an inline step's `output_contract`) with
// the one checker every driver uses (engine/internal/contract): a result
// that does not fit is a failed attempt of kind contract, retried with
// exactly these violations. The step's output_schema, guardrails and
// ensures are the engine's checks (Service.StepDone), after this one.
// Over MCP the engine keeps the original server's acceptance (it checks
// output_schema, not the contract), so this check belongs to the
// in-process runner.
func contractError(sp *specs.Spec, step *specs.Step, output any) error {
	vs := contract.Of(sp, step.OutputContract).Check(output)
	if len(vs) == 0 {
		return nil
	}
	return &engine.AttemptError{Kind: engine.AttemptContract, Violations: vs}
}
