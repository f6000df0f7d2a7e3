package state

import "encoding/json"

// TraceRecord is one call's trace (seed 000 §8.1, plus provider, usage,
// step_id and attempt). It is stored as JSON in FlowState.Trace and in
// EventTrace events.
type TraceRecord struct {
	Function           string         `json:"function"` // function name, or the step id for inline steps
	Model              string         `json:"model"`
	Provider           string         `json:"provider,omitempty"`
	Inputs             map[string]any `json:"inputs"`
	OpaqueInputs       []string       `json:"opaque_inputs,omitempty"` // names of inputs flagged opaque
	CompiledPromptHash string         `json:"compiled_prompt_hash"`
	ContractHash       string         `json:"contract_hash"`
	Attempts           int            `json:"attempts"`
	Output             any            `json:"output"`
	DurationMS         int64          `json:"duration_ms"`
	CostUSD            *float64       `json:"cost_usd"`
	CacheHit           bool           `json:"cache_hit"`
	RetryReasons       []string       `json:"retry_reasons"`
	FlowID             *string        `json:"flow_id"`
	ReviewID           *string        `json:"review_id"`
	StepID             string         `json:"step_id,omitempty"`
	Attempt            int            `json:"attempt,omitempty"`
	Usage              *Usage         `json:"usage,omitempty"`
	Repaired           bool           `json:"repaired,omitempty"` // JSON extracted from fences/prose

	// What a Go program's Call adds (ours): InputsTruncated says Inputs
	// were cut to bound the record (each cut is marked in place);
	// Retries are the failed attempts with their violations, why each
	// was retried; ToolCalls the tool calls the model made; Streamed says
	// the attempts were streamed (Fn.Stream); Error is why the call
	// failed ("" when it succeeded).
	Error           string           `json:"error,omitempty"`
	InputsTruncated bool             `json:"inputs_truncated,omitempty"`
	Retries         []AttemptFailure `json:"retries,omitempty"`
	ToolCalls       []ToolCallRecord `json:"tool_calls,omitempty"`
	Streamed        bool             `json:"streamed,omitempty"`
}

// AttemptFailure is one failed attempt of a call: its number (from 1,
// counted over the whole call) and the violations fed back to the next.
type AttemptFailure struct {
	Attempt    int      `json:"attempt"`
	Violations []string `json:"violations"`
}

// ToolCallRecord is one tool call a model made during a call: the
// attempt and round (from 1) it was made in, the tool's name, the
// arguments the model sent and the tool's result (JSON; cut to bound the
// record when large, Truncated then set) or the error the model was told
// instead, how long the tool ran and, for a tool that needs approval, the
// review that decided it.
type ToolCallRecord struct {
	Attempt    int             `json:"attempt"`
	Round      int             `json:"round"`
	ID         string          `json:"id,omitempty"`
	Name       string          `json:"name"`
	Args       json.RawMessage `json:"args,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      string          `json:"error,omitempty"`
	DurationMS int64           `json:"duration_ms"`
	ReviewID   string          `json:"review_id,omitempty"`
	Truncated  bool            `json:"truncated,omitempty"`
}

// Usage is token usage normalised into disjoint buckets: InputTokens excludes
// the cache read/write tokens; OutputTokens excludes ReasoningTokens.
type Usage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
	ReasoningTokens  int64 `json:"reasoning_tokens,omitempty"`
}

// Total is the sum of every bucket (what token budgets count).
func (u Usage) Total() int64 {
	return u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens + u.ReasoningTokens
}

// Add returns the bucket-wise sum.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		InputTokens:      u.InputTokens + o.InputTokens,
		OutputTokens:     u.OutputTokens + o.OutputTokens,
		CacheReadTokens:  u.CacheReadTokens + o.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens + o.CacheWriteTokens,
		ReasoningTokens:  u.ReasoningTokens + o.ReasoningTokens,
	}
}
