package stratum

import "time"

// CallTrace is the trace record of one Call, failed calls too. With
// a Store it is persisted as a trace entry of the call's flow; it is always
// kept by the Runtime (Runtime.Trace) and handed to Options.OnCall.
type CallTrace struct {
	// Function is the name given to NewInfer or Compute.
	Function string `json:"function"`
	// Model is the "provider/model" that answered ("" for Compute and for
	// cache hits).
	Model string `json:"model,omitempty"`
	// FlowID is the enclosing flow's id ("" outside a flow).
	FlowID string `json:"flow_id,omitempty"`
	// Inputs is the call's input, as JSON would render it (opaque fields
	// included: the trace is the program's own).
	Inputs any `json:"inputs"`
	// OpaqueInputs names the input fields tagged opaque.
	OpaqueInputs []string `json:"opaque_inputs,omitempty"`
	// Output is the accepted output (nil when the call failed).
	Output any `json:"output"`
	// ContractHash is the output contract's hash.
	ContractHash string `json:"contract_hash"`
	// PromptHash is the compiled-prompt hash of the last attempt.
	PromptHash string `json:"compiled_prompt_hash,omitempty"`
	// Attempts counts the LLM requests made (0 for a cache hit or a
	// failed precondition).
	Attempts int `json:"attempts"`
	// Violations holds, per failed attempt in order, what that attempt
	// violated (parse, schema and ensure violations).
	Violations [][]string `json:"violations,omitempty"`
	// Duration is the wall time of the call.
	Duration time.Duration `json:"duration_ns"`
	// CostUSD is the cost summed over every attempt (nil: unknown, such
	// as a model missing from the price table).
	CostUSD *float64 `json:"cost_usd"`
	// InputTokens and OutputTokens are summed over every attempt.
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	// CacheHit says the output came from the cache.
	CacheHit bool `json:"cache_hit"`
	// Error is the call's error text ("" when it succeeded).
	Error string `json:"error,omitempty"`
	// ToolCalls are the tool calls the model made, in the order their
	// rounds ended (Spec.Tools).
	ToolCalls []ToolCallTrace `json:"tool_calls,omitempty"`
	// Streamed says the call was made by Fn.Stream and its attempts
	// streamed (false for a cache hit).
	Streamed bool `json:"streamed,omitempty"`

	// failedAt numbers the failed attempts of Violations (from 1, over
	// the whole call: a refine loop's or a quorum's loops follow each
	// other).
	failedAt []int
}
