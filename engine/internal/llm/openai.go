package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
)

// OpenAI is a client for OpenAI-compatible Chat Completions APIs (OpenAI,
// Groq, OpenRouter, Ollama, vLLM, llama.cpp, DeepSeek, Together…).
type OpenAI struct {
	// Name is the provider name used in errors and traces ("openai", "groq"…).
	Name string
	// BaseURL ends before /chat/completions (e.g. https://api.openai.com/v1).
	BaseURL string
	APIKey  string // "" sends no Authorization header
	Client  *http.Client
	Retry   Retry
	// MaxTokensField is the body field for the output cap ("max_tokens" by
	// default; OpenAI itself wants "max_completion_tokens").
	MaxTokensField string
	// NoStrict sends json_schema with strict: false (providers or models that
	// do best-effort only).
	NoStrict bool
	// Extra is merged into every request body (per-provider defaults, e.g.
	// OpenRouter's provider.require_parameters).
	Extra map[string]any
	// Headers are sent with every request (before the key's).
	Headers map[string]string

	headersOnce sync.Once
	headers     map[string]string // Headers and the key's, made once
	endpoint    string            // BaseURL's /chat/completions, made with headers
}

// requestHeaders are the headers of every request: Headers, then the
// key's Authorization. Made once, with the endpoint (a client is not
// changed after its first request); the map is only read.
func (c *OpenAI) requestHeaders() map[string]string {
	c.headersOnce.Do(func() {
		c.endpoint = strings.TrimRight(c.BaseURL, "/") + "/chat/completions"
		c.headers = make(map[string]string, len(c.Headers)+1)
		maps.Copy(c.headers, c.Headers)
		if c.APIKey != "" {
			c.headers["Authorization"] = "Bearer " + c.APIKey
		}
	})
	return c.headers
}

// Body builds the request body (exported for tests and record/replay):
// chatBody's fields, the client's and the request's Extra merged in.
func (c *OpenAI) Body(req Request) (map[string]any, error) {
	b, err := c.chatBody(req)
	if err != nil {
		return nil, err
	}
	return c.bodyMap(b, req), nil
}

// bodyMap is b as a map, Extra merged in.
func (c *OpenAI) bodyMap(b *chatBody, req Request) map[string]any {
	body := map[string]any{"model": b.Model, "messages": b.Messages, "response_format": b.ResponseFormat}
	if b.Tools != nil {
		body["tools"] = b.Tools
	}
	if b.outputCap > 0 {
		body[c.maxTokensField()] = b.outputCap
	}
	if b.Temperature != nil {
		body["temperature"] = *b.Temperature
	}
	maps.Copy(body, c.Extra)
	maps.Copy(body, req.Extra)
	return body
}

// encodeBody is the request body's JSON: the struct itself when nothing
// is merged into it, else Body's map; the same bytes either way
// (TestBodyEncodesAsMaps).
func (c *OpenAI) encodeBody(req Request) ([]byte, error) {
	b, err := c.chatBody(req)
	if err != nil {
		return nil, err
	}
	var out []byte
	if len(c.Extra) > 0 || len(req.Extra) > 0 || (b.outputCap > 0 && b.MaxTokens == 0 && b.MaxCompletionTokens == 0) {
		out, err = marshal(c.bodyMap(b, req))
	} else {
		out, err = marshal(b)
	}
	if err != nil {
		return nil, fmt.Errorf("encoding the request: %w", err)
	}
	return out, nil
}

func (c *OpenAI) maxTokensField() string {
	if c.MaxTokensField == "" {
		return "max_tokens"
	}
	return c.MaxTokensField
}

// chatBody builds the body's fields: the messages (system, the user turn
// with its media, then req.Messages), tools, response_format (the
// schema's strict projection, encoded once per SchemaKey), the output cap
// and the temperature.
func (c *OpenAI) chatBody(req Request) (*chatBody, error) {
	if err := CheckMedia(c.Name, DialectOpenAI, allMedia(req)); err != nil {
		return nil, err
	}
	msgs := make([]any, 0, 2+len(req.Messages))
	if req.System != "" {
		msgs = append(msgs, chatMessage{Role: "system", Content: req.System})
	}
	if req.userTurn() {
		user, err := userParts(req)
		if err != nil {
			return nil, err
		}
		for i := range req.Media {
			user = append(user, openAIMedia(&req.Media[i]))
		}
		msgs = append(msgs, chatMessage{Role: "user", Content: user})
	}
	msgs = append(msgs, openAIMessages(req.Messages)...)
	b := &chatBody{Model: req.Model, Messages: msgs, Temperature: req.Temperature}
	if len(req.Tools) > 0 {
		b.Tools = openAITools(req.Tools)
	}
	if req.Schema != nil {
		schema, strict, err := projected(DialectOpenAI, req.SchemaKey, req.Schema, StrictSchema)
		if err != nil {
			return nil, fmt.Errorf("encoding the output schema: %w", err)
		}
		name := req.SchemaName
		if name == "" {
			name = "output"
		}
		b.ResponseFormat = openAIResponseFormat{Type: "json_schema",
			JSONSchema: &openAIJSONSchema{Name: name, Schema: schema, Strict: strict && !c.NoStrict}}
	} else {
		b.ResponseFormat = openAIResponseFormat{Type: "json_object"}
	}
	if n := RequestMaxTokens(req.Model, req.MaxTokens, false); n > 0 {
		b.outputCap = n
		switch c.maxTokensField() {
		case "max_tokens":
			b.MaxTokens = n
		case "max_completion_tokens":
			b.MaxCompletionTokens = n
		}
	}
	return b, nil
}

// userParts is the user turn: the instruction text, then the attachment as
// a separate text part.
func userParts(req Request) ([]any, error) {
	parts := make([]any, 1, 2+len(req.Media))
	parts[0] = textPart{Type: "text", Text: req.Prompt}
	if req.Attachment != nil {
		b, err := marshal(req.Attachment)
		if err != nil {
			return nil, fmt.Errorf("encoding the attached data: %w", err)
		}
		parts = append(parts, textPart{Type: "text", Text: "Attached data (JSON):\n" + string(b)})
	}
	return parts, nil
}

// The request bodies are JSON objects whose keys encode in sorted order
// (encoding/json's rule for maps). The structs below stand for the maps
// of the hot path and list their fields in that order, so a body encodes
// to the same bytes as the maps it replaces (recordings keep replaying)
// while its encoding allocates far less.

// chatMessage is a message of a Chat Completions body: content (a string,
// or a list of parts), then role.
type chatMessage struct {
	Content any    `json:"content"`
	Role    string `json:"role"`
}

// textPart is a text part of a user turn ({"text": …, "type": "text"}),
// for the three dialects.
type textPart struct {
	Text string `json:"text"`
	Type string `json:"type"`
}

// chatBody is a Chat Completions body (Extra aside). outputCap is the
// output cap, sent in the field MaxTokensField names: MaxTokens or
// MaxCompletionTokens, or (another name) only through Body's map.
type chatBody struct {
	MaxCompletionTokens int      `json:"max_completion_tokens,omitempty"`
	MaxTokens           int      `json:"max_tokens,omitempty"`
	Messages            []any    `json:"messages"`
	Model               string   `json:"model"`
	ResponseFormat      any      `json:"response_format"`
	Temperature         *float64 `json:"temperature,omitempty"`
	Tools               []any    `json:"tools,omitempty"`

	outputCap int
}

// openAIResponseFormat is response_format: json_schema (with the schema),
// then type.
type openAIResponseFormat struct {
	JSONSchema *openAIJSONSchema `json:"json_schema,omitempty"`
	Type       string            `json:"type"`
}

// openAIJSONSchema is response_format.json_schema: the projected schema
// already encoded.
type openAIJSONSchema struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict bool            `json:"strict"`
}

type openAIResponse struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		FinishReason string `json:"finish_reason"`
		Message      struct {
			Content   *string `json:"content"`
			Refusal   *string `json:"refusal"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int64 `json:"prompt_tokens"`
		CompletionTokens    int64 `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
		CompletionTokensDetails *struct {
			ReasoningTokens int64 `json:"reasoning_tokens"`
		} `json:"completion_tokens_details"`
		CacheWriteTokens int64    `json:"cache_write_tokens"`
		Cost             *float64 `json:"cost"`
	} `json:"usage"`
}

// Complete sends one chat completion (transport retries inside).
func (c *OpenAI) Complete(ctx context.Context, req Request) (*Response, error) {
	headers := c.requestHeaders()
	if req.OnDelta != nil {
		body, err := c.Body(req)
		if err != nil {
			return nil, err
		}
		return c.stream(ctx, req, body, headers)
	}
	b, err := c.encodeBody(req)
	if err != nil {
		return nil, err
	}
	raw, tries, err := post(ctx, c.Client, c.Name, c.endpoint, headers, b, c.Retry)
	if err != nil {
		return nil, err
	}
	resp, err := c.parse(raw, len(req.Tools) > 0)
	if resp != nil {
		resp.Tries = tries
	}
	return resp, err
}

func (c *OpenAI) parse(raw []byte, tools bool) (*Response, error) {
	var r openAIResponse
	if err := decodeResponse(raw, &r); err != nil {
		return nil, &TransportError{Provider: c.Name, Tries: 1, Last: "malformed response body: " + err.Error()}
	}
	out := &Response{ID: r.ID, Model: r.Model}
	if u := r.Usage; u != nil {
		cached := int64(0)
		if u.PromptTokensDetails != nil {
			cached = u.PromptTokensDetails.CachedTokens
		}
		reasoning := int64(0)
		if u.CompletionTokensDetails != nil {
			reasoning = u.CompletionTokensDetails.ReasoningTokens
		}
		out.Usage = Usage{
			Input:      nonNeg(u.PromptTokens - cached - u.CacheWriteTokens),
			CacheRead:  cached,
			CacheWrite: u.CacheWriteTokens,
			Output:     nonNeg(u.CompletionTokens - reasoning),
			Reasoning:  reasoning,
		}
		out.ProviderCostUSD = u.Cost
	}
	if len(r.Choices) == 0 {
		return nil, &APIError{Provider: c.Name, Status: 200, Message: "the response has no choices"}
	}
	ch := r.Choices[0]
	out.FinishReason = ch.FinishReason
	if ch.Message.Refusal != nil && *ch.Message.Refusal != "" {
		return out, &RefusalError{Provider: c.Name, Message: *ch.Message.Refusal, Usage: out.Usage}
	}
	switch ch.FinishReason {
	case "length":
		return out, &TruncatedError{Provider: c.Name, Reason: "finish_reason=length", Usage: out.Usage}
	case "content_filter":
		return out, &RefusalError{Provider: c.Name, Message: "finish_reason=content_filter", Usage: out.Usage}
	}
	if tools && len(ch.Message.ToolCalls) > 0 {
		for _, tc := range ch.Message.ToolCalls {
			out.ToolCalls = append(out.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Args: json.RawMessage(tc.Function.Arguments)})
		}
		if ch.Message.Content != nil {
			out.Content = *ch.Message.Content
		}
		return out, nil
	}
	if ch.Message.Content != nil && strings.TrimSpace(*ch.Message.Content) != "" {
		out.Content = *ch.Message.Content
	} else if len(ch.Message.ToolCalls) > 0 {
		out.Content = ch.Message.ToolCalls[0].Function.Arguments
		out.FromTool = true
	}
	return out, nil
}

func nonNeg(n int64) int64 {
	if n < 0 {
		return 0
	}
	return n
}
