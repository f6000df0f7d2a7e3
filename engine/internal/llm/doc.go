// Package llm holds stratum's hand-written LLM clients: one for the
// OpenAI-compatible Chat Completions API (OpenAI, Groq, OpenRouter, Ollama,
// vLLM, llama.cpp, DeepSeek, Together, … by base URL) and one for the
// Anthropic Messages API, both over net/http with no SDK.
//
// A Router maps "provider/model" names to a Provider. Every Provider asks for
// structured output through its own mechanism (OpenAI response_format
// json_schema strict with the projected schema; Anthropic a forced tool
// named "output" with the trimmed schema) and reports usage in disjoint
// buckets. The caller (engine/internal/infer) validates the answer against the
// original schema.
//
// The output cap a request sends (max_completion_tokens / max_tokens) is
// the lower of what the caller asks (a token budget) and the model's output
// limit, from a small table beside the price table (limits.go;
// DefaultOutputTokens for unknown models): providers answer HTTP 400 above
// a model's limit. Without a request, OpenAI-compatible bodies leave the
// field out and Anthropic's (which requires it) send the model's limit.
//
// Transport errors (429 honouring Retry-After, 5xx, per-try timeouts,
// connection resets) are retried inside Complete with jittered exponential
// backoff bounded by the context deadline; they never surface as a failed
// attempt unless the retries run out (*TransportError). A 4xx is a
// configuration error (*APIError) and fails fast. Refusals (*RefusalError)
// and truncation (*TruncatedError) are distinct errors.
//
// Cost comes from a vendored price table (prices/genai-prices.json, a
// curated subset of pydantic/genai-prices, MIT, see prices/LICENSE): an
// unknown model has an unknown cost (nil, never 0); local providers cost 0;
// OpenRouter's reported usage.cost wins when present.
//
// Record and replay work at the HTTP level (Recorder and Replayer are
// http.RoundTrippers keyed by the canonical request: method, endpoint and
// the JSON body with sorted keys, never the host, base path or auth
// headers), so a run
// recorded with --record replays offline with --replay, with no network and
// no API key. The record is JSON Lines (format 2: a header, then one
// exchange appended per line as it ends, never rewritten), so a run that
// dies leaves a record that replays up to its last complete line; an answer
// over the response cap (32 MiB) fails the call as in a normal run and is
// not recorded. Format 1 files (one JSON object) still replay.
package llm
