package llm

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strings"
)

// DialectGemini is Google's Gemini API (generateContent).
const DialectGemini = "gemini"

// Gemini is a client for the Gemini API's generateContent over REST.
// Structured output is responseMimeType application/json with the
// contract as responseJsonSchema; with tools, the answer is a forced call
// of a function named "output" (as Anthropic's), since a JSON response and
// function calling do not combine on every model.
type Gemini struct {
	Name    string // provider name in errors and traces (default "gemini")
	BaseURL string // e.g. https://generativelanguage.googleapis.com/v1beta
	APIKey  string // sent as x-goog-api-key
	Client  *http.Client
	Retry   Retry
	Headers map[string]string
	Extra   map[string]any
}

func (c *Gemini) name() string {
	if c.Name == "" {
		return "gemini"
	}
	return c.Name
}

// Body builds the request body.
func (c *Gemini) Body(req Request) (map[string]any, error) {
	if err := CheckMedia(c.name(), DialectGemini, allMedia(req)); err != nil {
		return nil, err
	}
	contents := []any{}
	if req.userTurn() {
		parts := []any{}
		user, err := userParts(req)
		if err != nil {
			return nil, err
		}
		for _, p := range user {
			parts = append(parts, map[string]any{"text": p.(textPart).Text})
		}
		for i := range req.Media {
			parts = append(parts, geminiMedia(&req.Media[i]))
		}
		contents = append(contents, map[string]any{"role": "user", "parts": parts})
	}
	contents = append(contents, geminiContents(req.Messages)...)
	body := map[string]any{"contents": contents}
	if req.System != "" {
		body["systemInstruction"] = map[string]any{"parts": []any{map[string]any{"text": req.System}}}
	}
	gen := map[string]any{}
	raw, key := req.Schema, req.SchemaKey
	if raw == nil {
		raw, key = map[string]any{"type": "object"}, ""
	}
	schema, _, err := projected(DialectGemini, key, raw, func(s map[string]any) (map[string]any, bool) { return s, true })
	if err != nil {
		return nil, fmt.Errorf("encoding the output schema: %w", err)
	}
	if len(req.Tools) > 0 {
		decls := make([]any, 0, len(req.Tools)+1)
		for _, t := range req.Tools {
			decls = append(decls, map[string]any{"name": t.Name, "description": t.Description, "parametersJsonSchema": t.Schema})
		}
		decls = append(decls, map[string]any{"name": OutputTool,
			"description":          "Return the result. Call this function exactly once with the complete answer.",
			"parametersJsonSchema": schema})
		body["tools"] = []any{map[string]any{"functionDeclarations": decls}}
		body["toolConfig"] = map[string]any{"functionCallingConfig": map[string]any{"mode": "ANY"}}
	} else {
		gen["responseMimeType"] = "application/json"
		gen["responseJsonSchema"] = schema
	}
	if n := RequestMaxTokens(req.Model, req.MaxTokens, false); n > 0 {
		gen["maxOutputTokens"] = n
	}
	if req.Temperature != nil {
		gen["temperature"] = *req.Temperature
	}
	body["generationConfig"] = gen
	maps.Copy(body, c.Extra)
	maps.Copy(body, req.Extra)
	return body, nil
}

func geminiMedia(m *Media) map[string]any {
	if m.URL != "" {
		return map[string]any{"fileData": map[string]any{"mimeType": m.MIMEType, "fileUri": m.URL}}
	}
	return map[string]any{"inlineData": map[string]any{"mimeType": m.MIMEType, "data": base64.StdEncoding.EncodeToString(m.Data)}}
}

// geminiContents encodes msgs: the model's turns have role "model", tool
// results are a user turn of functionResponse parts.
func geminiContents(msgs []Message) []any {
	var out []any
	for _, m := range msgs {
		role := "user"
		if m.Role == RoleAssistant {
			role = "model"
		}
		var parts []any
		for _, p := range m.Parts {
			switch {
			case p.ToolResult != nil:
				r := p.ToolResult
				key := "result"
				if r.IsError {
					key = "error"
				}
				var v any = resultText(r)
				if !r.IsError && json.Valid(r.Content) {
					v = r.Content
				}
				parts = append(parts, map[string]any{"functionResponse": map[string]any{"id": r.ID, "name": r.Name,
					"response": map[string]any{key: v}}})
			case p.ToolCall != nil:
				parts = append(parts, map[string]any{"functionCall": map[string]any{"id": p.ToolCall.ID, "name": p.ToolCall.Name,
					"args": argsObject(p.ToolCall.Args)}})
			case p.Media != nil:
				parts = append(parts, geminiMedia(p.Media))
			case p.Text != "":
				parts = append(parts, map[string]any{"text": p.Text})
			}
		}
		out = append(out, map[string]any{"role": role, "parts": parts})
	}
	return out
}

// url is the endpoint of a call of model (method "generateContent" or
// "streamGenerateContent").
func (c *Gemini) url(model, method string) string {
	base := strings.TrimRight(c.BaseURL, "/")
	u := base + "/models/" + url.PathEscape(model) + ":" + method
	if method == "streamGenerateContent" {
		u += "?alt=sse"
	}
	return u
}

func (c *Gemini) headers() map[string]string {
	h := map[string]string{}
	maps.Copy(h, c.Headers)
	if c.APIKey != "" {
		h["x-goog-api-key"] = c.APIKey
	}
	return h
}

// Complete sends one generateContent request (transport retries inside),
// or streams it when req.OnDelta is set.
func (c *Gemini) Complete(ctx context.Context, req Request) (*Response, error) {
	body, err := c.Body(req)
	if err != nil {
		return nil, err
	}
	b, err := marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encoding the request: %w", err)
	}
	if req.OnDelta != nil {
		return c.stream(ctx, req, b)
	}
	raw, tries, err := post(ctx, c.Client, c.name(), c.url(req.Model, "generateContent"), c.headers(), b, c.Retry)
	if err != nil {
		return nil, err
	}
	var r geminiResponse
	if err := decodeResponse(raw, &r); err != nil {
		return nil, &TransportError{Provider: c.name(), Tries: 1, Last: "malformed response body: " + err.Error()}
	}
	acc := &geminiAnswer{}
	acc.add(&r)
	resp, err := acc.response(c.name(), len(req.Tools) > 0)
	if resp != nil {
		resp.Tries = tries
	}
	return resp, err
}

// geminiResponse is one generateContent answer (or one streamed piece).
type geminiResponse struct {
	ResponseID   string `json:"responseId"`
	ModelVersion string `json:"modelVersion"`
	Candidates   []struct {
		FinishReason string `json:"finishReason"`
		Content      struct {
			Parts []struct {
				Text         string `json:"text"`
				Thought      bool   `json:"thought"`
				FunctionCall *struct {
					ID   string          `json:"id"`
					Name string          `json:"name"`
					Args json.RawMessage `json:"args"`
				} `json:"functionCall"`
			} `json:"parts"`
		} `json:"content"`
	} `json:"candidates"`
	PromptFeedback *struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	UsageMetadata *struct {
		PromptTokenCount        int64 `json:"promptTokenCount"`
		CandidatesTokenCount    int64 `json:"candidatesTokenCount"`
		ThoughtsTokenCount      int64 `json:"thoughtsTokenCount"`
		CachedContentTokenCount int64 `json:"cachedContentTokenCount"`
	} `json:"usageMetadata"`
}

// geminiAnswer accumulates a Gemini answer (one response, or the pieces of
// a stream).
type geminiAnswer struct {
	id, model, finish, blocked string
	text                       strings.Builder
	calls                      []ToolCall
	usage                      Usage
}

func (a *geminiAnswer) add(r *geminiResponse) {
	if r.ResponseID != "" {
		a.id = r.ResponseID
	}
	if r.ModelVersion != "" {
		a.model = r.ModelVersion
	}
	if r.PromptFeedback != nil && r.PromptFeedback.BlockReason != "" {
		a.blocked = r.PromptFeedback.BlockReason
	}
	if u := r.UsageMetadata; u != nil {
		a.usage = Usage{Input: nonNeg(u.PromptTokenCount - u.CachedContentTokenCount), CacheRead: u.CachedContentTokenCount,
			Output: u.CandidatesTokenCount, Reasoning: u.ThoughtsTokenCount}
	}
	if len(r.Candidates) == 0 {
		return
	}
	ch := r.Candidates[0]
	if ch.FinishReason != "" {
		a.finish = ch.FinishReason
	}
	for _, p := range ch.Content.Parts {
		switch {
		case p.FunctionCall != nil:
			id := p.FunctionCall.ID
			if id == "" {
				id = fmt.Sprintf("call_%d", len(a.calls)+1)
			}
			a.calls = append(a.calls, ToolCall{ID: id, Name: p.FunctionCall.Name, Args: argsObject(p.FunctionCall.Args)})
		case !p.Thought:
			a.text.WriteString(p.Text)
		}
	}
}

// response is the accumulated answer, or the error its finish reason
// means.
func (a *geminiAnswer) response(provider string, tools bool) (*Response, error) {
	out := &Response{ID: a.id, Model: a.model, FinishReason: a.finish, Usage: a.usage, Content: a.text.String()}
	switch {
	case a.blocked != "":
		return out, &RefusalError{Provider: provider, Message: "prompt blocked: " + a.blocked, Usage: a.usage}
	case a.finish == "MAX_TOKENS":
		return out, &TruncatedError{Provider: provider, Reason: "finishReason=MAX_TOKENS", Usage: a.usage}
	case a.finish == "SAFETY" || a.finish == "RECITATION" || a.finish == "PROHIBITED_CONTENT" || a.finish == "BLOCKLIST" || a.finish == "SPII":
		return out, &RefusalError{Provider: provider, Message: "finishReason=" + a.finish, Usage: a.usage}
	}
	for _, tc := range a.calls {
		if tc.Name == OutputTool && tools {
			out.Content, out.FromTool = string(tc.Args), true
			continue
		}
		out.ToolCalls = append(out.ToolCalls, tc)
	}
	if len(out.ToolCalls) > 0 {
		out.Content, out.FromTool = a.text.String(), false
	}
	return out, nil
}
