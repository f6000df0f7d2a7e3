package llm

import (
	"context"
	"fmt"
	"strings"
)

// Provider completes one structured-output request. Implementations retry
// transport errors internally and must honour ctx (cancellation and
// deadline).
type Provider interface {
	Complete(ctx context.Context, req Request) (*Response, error)
}

// Request is one LLM call. The prompt is a single user turn: Prompt is the
// instruction text and Attachment, when non-nil, a separate JSON data
// attachment (opaque inputs) sent as its own content part, never mixed into
// the instruction text.
type Request struct {
	// Model is the provider-local model name ("gpt-4o-mini", without the
	// "openai/" prefix).
	Model  string
	System string
	Prompt string
	// Attachment is marshalled to JSON and sent as a separate content part
	// (nil = none).
	Attachment any
	// Schema is the output JSON Schema (object root); nil asks for any JSON
	// object. Providers send their projection of it.
	Schema map[string]any
	// SchemaName names the schema for providers that want a name (default
	// "output").
	SchemaName string
	// SchemaKey, when set, names Schema's content (its contract hash, the
	// same for the same schema): a provider then projects and encodes
	// Schema once per key and reuses the encoding for every request that
	// carries it. Empty: encoded anew for each request.
	SchemaKey string
	// MaxTokens caps the output tokens (0 = the client's default).
	MaxTokens   int
	Temperature *float64
	// Extra are provider-specific body fields merged into the request body
	// (OpenRouter provider, vLLM structured_outputs, Ollama options, …).
	Extra map[string]any
	// Media are parts of the user turn after the prompt text and the
	// attachment (images, audio, documents), never in the text.
	Media []Media
	// Messages follow the user turn (the model's tool calls and their
	// results); with no Prompt, Attachment or Media they are the whole
	// conversation after the system message.
	Messages []Message
	// Tools are the tools the model may call; an answer with calls has
	// Response.ToolCalls.
	Tools []ToolDef
	// OnDelta, when set, streams the answer (server-sent events): it is
	// called with each piece of the answer's text as it arrives (for a
	// structured answer, a piece of its JSON). An error it returns stops
	// the request with that error.
	OnDelta func(text string) error
}

// userTurn reports whether req has a user turn of its own (Prompt,
// Attachment or Media) before its Messages.
func (req Request) userTurn() bool {
	return req.Prompt != "" || req.Attachment != nil || len(req.Media) > 0
}

// Usage is token usage in disjoint buckets: Input excludes the cache
// read/write tokens, Output excludes Reasoning.
type Usage struct {
	Input      int64 `json:"input_tokens"`
	Output     int64 `json:"output_tokens"`
	CacheRead  int64 `json:"cache_read_tokens,omitempty"`
	CacheWrite int64 `json:"cache_write_tokens,omitempty"`
	Reasoning  int64 `json:"reasoning_tokens,omitempty"`
}

// Total sums every bucket.
func (u Usage) Total() int64 {
	return u.Input + u.Output + u.CacheRead + u.CacheWrite + u.Reasoning
}

// InputInclusive is the input total including cache reads and writes (what
// OTel's gen_ai.usage.input_tokens reports).
func (u Usage) InputInclusive() int64 { return u.Input + u.CacheRead + u.CacheWrite }

// OutputInclusive is the output total including reasoning tokens.
func (u Usage) OutputInclusive() int64 { return u.Output + u.Reasoning }

// Response is a successful completion.
type Response struct {
	// Content is the answer text: the structured JSON (from the output tool
	// or the json_schema message), or free text the caller must extract JSON
	// from.
	Content string
	// FromTool says Content came from a tool call's arguments.
	FromTool     bool
	FinishReason string
	ID           string
	Model        string // the model the provider says answered
	Usage        Usage
	// ProviderCostUSD is a cost reported by the provider itself (OpenRouter's
	// usage.cost); nil when not reported.
	ProviderCostUSD *float64
	// Tries is the number of HTTP requests made (1 + transport retries).
	Tries int
	// ToolCalls are the tool calls the model answered with (only when the
	// request had Tools); Content is then any text beside them.
	ToolCalls []ToolCall
}

// APIError is a non-retryable HTTP error answer (4xx: bad request, bad key,
// unknown model, unsupported schema…): a configuration error that fails fast.
type APIError struct {
	Provider string
	Status   int
	Message  string
}

func (e *APIError) Error() string {
	hint := ""
	switch e.Status {
	case 401, 403:
		hint = " (check the API key)"
	case 404:
		hint = " (check the model name and base URL)"
	}
	return fmt.Sprintf("%s API error %d%s: %s", e.Provider, e.Status, hint, e.Message)
}

// TransportError means transport retries ran out (the deadline would pass,
// or the retry limit was hit) on 429/5xx/timeouts/connection errors.
type TransportError struct {
	Provider string
	Tries    int
	Last     string
	// Status is the last try's HTTP status (0: no answer, such as a
	// connection reset or a try that timed out).
	Status int
	// Deadline: the retries stopped early because the next one would start
	// after the context's deadline.
	Deadline bool
}

func (e *TransportError) Error() string {
	return fmt.Sprintf("%s: transport failed after %d tries: %s", e.Provider, e.Tries, e.Last)
}

// UnreachableError means the provider could not be reached: the
// connection was refused, the host or network is unreachable, its name
// does not resolve, or TLS failed. It is retried only within
// Retry.UnreachableTries (Permanent ones not at all).
type UnreachableError struct {
	Provider string
	// Host is the host:port that could not be reached.
	Host string
	// Reason is "connection refused", "host unreachable", "network
	// unreachable", "DNS" or "TLS".
	Reason string
	// Permanent: trying again will not help (a name that does not exist, a
	// certificate that does not verify).
	Permanent bool
	Tries     int
	// Err is the last try's error (secrets masked).
	Err error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("provider unreachable: %s at %s (%s) after %d %s: %v", e.Provider, e.Host, e.Reason, e.Tries, plural(e.Tries, "try", "tries"), e.Err)
}

// Unwrap returns the last try's error.
func (e *UnreachableError) Unwrap() error { return e.Err }

// TooLargeError is an answer larger than MaxResponseBytes: it is refused
// at once and the request is never re-sent (it was paid for).
type TooLargeError struct {
	Provider string
	Limit    int
	// Declared is the size the answer declared (Content-Length), when it
	// did: such an answer is refused before it is read.
	Declared int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: answer larger than %d MiB (refused, not re-sent)", e.Provider, e.Limit>>20)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// RefusalError is a model refusal (OpenAI message.refusal or
// finish_reason=content_filter, Anthropic stop_reason=refusal).
type RefusalError struct {
	Provider string
	Message  string
	Usage    Usage
}

func (e *RefusalError) Error() string {
	msg := strings.TrimSpace(e.Message)
	if msg == "" {
		msg = "no reason given"
	}
	return fmt.Sprintf("the model refused (%s): %s", e.Provider, msg)
}

// TruncatedError means the model hit its output limit before finishing
// (finish_reason=length, stop_reason=max_tokens).
type TruncatedError struct {
	Provider string
	Reason   string
	Usage    Usage
}

func (e *TruncatedError) Error() string {
	return fmt.Sprintf("the answer was truncated at the output token limit (%s %s)", e.Provider, e.Reason)
}

// ConfigError is a local configuration problem (unknown provider, missing
// key, malformed model name).
type ConfigError struct{ Message string }

func (e *ConfigError) Error() string { return e.Message }
