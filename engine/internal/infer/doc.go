// Package infer executes infer steps (infer functions and inline steps
// without agent/run) with an LLM: the prompt compiler of seed 000 §4, an
// engine.Executor where one attempt is one LLM call, and the infer loop of
// the Go library (engine/stratum).
//
// Executor.Attempt is one LLM call without the engine's step types (model,
// budget check, prompt, chat span, usage and cost, answer decoding); the
// spec executor's Execute is an adapter over it, so `stratum run` and the
// library send the same prompts. Executor.Loop is seed 000 §3.1's loop over
// Attempt, for the library: up to Retries+1 attempts, a budget view before
// each, the caller's Check (schema, decoding, ensures) on each answer, only
// the previous attempt's violations in the next prompt, usage and cost
// summed, an "infer NAME" span with a "retry" event per retry; it ends in
// an *ExhaustedError (Parse says whether the last failure was a parse
// failure) or a budget, config or compile error. The engine's runner keeps
// its own retry loop, as persisted state transitions (Service.StepDone),
// over Execute.
//
// The compiler assembles, newline-joined: the intent; each context string;
// "Inputs:" and one "  name: value" line per non-opaque input (a string of
// several lines as a fenced block indented under "  name:", so no input
// line starts at the margin and none can forge the retry block); on a retry
// "Previous attempt failed:", one "  - violation" line per violation of the
// previous attempt only, and "Fix these issues specifically."; when
// opaque inputs exist, "See attached data for: a, b"; and last
// PromptParts.Tail (the library's refine feedback). Opaque values travel
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
// and returns the output with its usage, cost and trace record. The answer
// is checked against the step's output contract by the runner, with the
// checker every driver shares (engine/internal/contract), and against
// output_schema, guardrails and ensures by the engine (Service.StepDone):
// their violations come back as StepRequest.Violations of the next attempt.
// Parse failures, refusals, truncation and exhausted transport retries are
// *engine.AttemptError with kinds parse, refusal, truncated and transport;
// configuration problems (no model, no key, 4xx, replay miss), a provider
// that cannot be reached (connection refused, DNS, TLS: "provider
// unreachable", after the transport's few bounded tries) and an answer
// over llm.MaxResponseBytes (refused once, never re-sent) have kind
// config, which stops a run. The provider's failures (transport,
// unreachable, too large, 4xx) come as a *ProviderError carrying the llm
// error, which Loop never retries. A transport that stops retrying because
// the caller's deadline would pass says so; only the call's own deadline is
// reported as the call timeout. The provider call, retries included, is bounded by
// Executor.CallTimeout (config llm_timeout, STRATUM_LLM_TIMEOUT; default
// DefaultCallTimeout) or the ms budget's deadline, whichever is sooner; the
// first is an attempt of kind timeout whose violation says the call timed
// out, the second a budget exhaustion.
package infer
