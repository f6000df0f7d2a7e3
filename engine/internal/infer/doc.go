// Package infer executes infer steps (infer functions and inline steps
// without agent/run) with an LLM: the prompt compiler of seed 000 §4 and an
// engine.Executor where one attempt is one LLM call.
//
// The compiler assembles, newline-joined: the intent; each context string;
// "Inputs:" and one "  name: value" line per non-opaque input; on a retry
// "Previous attempt failed:", one "  - violation" line per violation of the
// previous attempt only, and "Fix these issues specifically."; and, when
// opaque inputs exist, "See attached data for: a, b". Opaque values travel
// as a separate JSON attachment (its own content part of the user turn),
// never in the instruction text, and an opaque input interpolated as {name}
// into the intent is a *CompileError. The compiled-prompt hash is the first
// 12 hex digits of the SHA-256 of the instruction text.
//
// The Executor checks the budget before the call (an exhausted deadline,
// usd or token envelope returns an error wrapping engine.ErrBudgetExhausted
// and spends no attempt), calls the provider (transport retries happen
// inside the client and spend no attempt), extracts the JSON answer (code
// fences and surrounding prose are tolerated and recorded as "repaired"),
// and returns the output with its usage, cost and trace record. Schema,
// ensure and guardrail checks are the engine's (Service.StepDone): their
// violations come back as StepRequest.Violations of the next attempt.
// Parse failures, refusals, truncation and exhausted transport retries are
// *engine.AttemptError with kinds parse, refusal, truncated and transport;
// configuration problems (no model, no key, 4xx, replay miss) have kind
// config. The provider call, retries included, is bounded by
// Executor.CallTimeout (config llm_timeout, STRATUM_LLM_TIMEOUT; default
// DefaultCallTimeout) or the ms budget's deadline, whichever is sooner; the
// first is an attempt of kind timeout whose violation says the call timed
// out, the second a budget exhaustion.
package infer
