package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
)

// AnthropicVersion is the anthropic-version header sent.
const AnthropicVersion = "2023-06-01"

// Anthropic is a client for the Anthropic Messages API. Structured output is
// a forced tool named "output" whose input schema is the trimmed contract
// schema (works on every model).
type Anthropic struct {
	Name    string // provider name in errors and traces (default "anthropic")
	BaseURL string // e.g. https://api.anthropic.com (…/v1/messages is appended)
	APIKey  string
	Client  *http.Client
	Retry   Retry
	Extra   map[string]any
	// Headers are sent with every request (before the key's).
	Headers map[string]string
}

// OutputTool is the name of the forced tool carrying the structured answer.
const OutputTool = "output"

func (c *Anthropic) name() string {
	if c.Name == "" {
		return "anthropic"
	}
	return c.Name
}

// Body builds the request body.
func (c *Anthropic) Body(req Request) (map[string]any, error) {
	if err := CheckMedia(c.name(), DialectAnthropic, allMedia(req)); err != nil {
		return nil, err
	}
	msgs := []any{}
	if req.userTurn() {
		parts, err := userParts(req)
		if err != nil {
			return nil, err
		}
		for i := range req.Media {
			parts = append(parts, anthropicMedia(&req.Media[i]))
		}
		msgs = append(msgs, map[string]any{"role": "user", "content": parts})
	}
	msgs = append(msgs, anthropicMessages(req.Messages)...)
	body := map[string]any{
		"model":      req.Model,
		"max_tokens": RequestMaxTokens(req.Model, req.MaxTokens, true),
		"messages":   msgs,
	}
	if req.System != "" {
		body["system"] = req.System
	}
	schema, key := req.Schema, req.SchemaKey
	if schema == nil {
		schema, key = map[string]any{"type": "object"}, ""
	}
	trimmed, _, err := projected(DialectAnthropic, key, schema, func(s map[string]any) (map[string]any, bool) { return TrimmedSchema(s), true })
	if err != nil {
		return nil, fmt.Errorf("encoding the output schema: %w", err)
	}
	body["tools"] = append(anthropicTools(req.Tools), map[string]any{
		"name":         OutputTool,
		"description":  "Return the result. Call this tool exactly once with the complete answer.",
		"input_schema": trimmed,
	})
	body["tool_choice"] = map[string]any{"type": "tool", "name": OutputTool}
	if len(req.Tools) > 0 {
		// The model calls the user's tools, or "output" with the answer.
		body["tool_choice"] = map[string]any{"type": "any"}
	}
	if req.Temperature != nil {
		body["temperature"] = *req.Temperature
	}
	maps.Copy(body, c.Extra)
	maps.Copy(body, req.Extra)
	return body, nil
}

type anthropicResponse struct {
	ID         string `json:"id"`
	Model      string `json:"model"`
	StopReason string `json:"stop_reason"`
	Content    []struct {
		Type  string          `json:"type"`
		ID    string          `json:"id"`
		Text  string          `json:"text"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"content"`
	Usage struct {
		InputTokens              int64 `json:"input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	} `json:"usage"`
}

// Complete sends one Messages request (transport retries inside).
func (c *Anthropic) Complete(ctx context.Context, req Request) (*Response, error) {
	body, err := c.Body(req)
	if err != nil {
		return nil, err
	}
	headers := map[string]string{"anthropic-version": AnthropicVersion}
	maps.Copy(headers, c.Headers)
	if c.APIKey != "" {
		headers["x-api-key"] = c.APIKey
	}
	base := strings.TrimRight(c.BaseURL, "/")
	url := base + "/v1/messages"
	if strings.HasSuffix(base, "/v1") {
		url = base + "/messages"
	}
	if req.OnDelta != nil {
		return c.stream(ctx, req, body, url, headers)
	}
	b, err := marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encoding the request: %w", err)
	}
	raw, tries, err := post(ctx, c.Client, c.name(), url, headers, b, c.Retry)
	if err != nil {
		return nil, err
	}
	resp, err := c.parse(raw)
	if resp != nil {
		resp.Tries = tries
	}
	return resp, err
}

func (c *Anthropic) parse(raw []byte) (*Response, error) {
	var r anthropicResponse
	if err := decodeResponse(raw, &r); err != nil {
		return nil, &TransportError{Provider: c.name(), Tries: 1, Last: "malformed response body: " + err.Error()}
	}
	out := &Response{ID: r.ID, Model: r.Model, FinishReason: r.StopReason, Usage: Usage{
		Input:      r.Usage.InputTokens,
		Output:     r.Usage.OutputTokens,
		CacheRead:  r.Usage.CacheReadInputTokens,
		CacheWrite: r.Usage.CacheCreationInputTokens,
	}}
	var text []string
	for _, b := range r.Content {
		switch b.Type {
		case "tool_use":
			switch {
			case b.Name == OutputTool && out.Content == "" && !out.FromTool:
				out.Content = string(b.Input)
				out.FromTool = true
			case b.Name != OutputTool:
				out.ToolCalls = append(out.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Args: b.Input})
			}
		case "text":
			text = append(text, b.Text)
		}
	}
	switch r.StopReason {
	case "refusal":
		return out, &RefusalError{Provider: c.name(), Message: strings.Join(text, "\n"), Usage: out.Usage}
	case "max_tokens":
		return out, &TruncatedError{Provider: c.name(), Reason: "stop_reason=max_tokens", Usage: out.Usage}
	}
	if len(out.ToolCalls) > 0 || !out.FromTool {
		out.Content, out.FromTool = strings.Join(text, "\n"), false
	}
	return out, nil
}
