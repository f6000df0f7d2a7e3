// Package contract is the one check of an answer against an output
// contract: a spec's contract (a function's `output`, an inline step's
// `output_contract`, a flow's `output`) or a Go program's output type. Every
// driver that accepts an answer as a contract's value checks it here, so
// the rule and its violation text are the same everywhere:
//
//   - `stratum run` (engine/run) checks every answer an executor returns —
//     an LLM's (infer), a command's (compute, run:), an agent's — before it
//     reports it; a violation is a failed attempt, retried with exactly
//     these violations in the next prompt (or on the command's stdin);
//   - the engine checks a flow's output against the flow's `output`
//     contract when the flow completes, for every driver;
//   - the Go library (engine/stratum) checks each Call's answer against its
//     output type's schema here, the contract named after the type.
//
// A violation reads "output contract 'NAME' violation: MSG", MSG being
// specs.Schema.Validate's text ("missing required property 'phone'", "at
// '/quantity': must be of type integer but found string \"3\""). Contracts
// are open as in the original: a key the contract does not name is
// accepted unless the schema closes the object (additionalProperties:
// false, as the library's Go types and a step's output_schema may).
//
// Over MCP the agent reports a step's result and the engine keeps the
// original's acceptance: output_schema, guardrails and ensures, not the
// function's contract. It imports specs only, so engine itself may use it.
package contract
