package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// DialectModel is a program's own model (Config.Models): no HTTP of ours,
// the model answers in the library's terms.
const DialectModel = "model"

// ModelError is a program's model's failure (its Generate returned Err):
// a failure of the provider, never of an answer.
type ModelError struct {
	Provider string
	Err      error
}

func (e *ModelError) Error() string { return e.Provider + ": " + e.Err.Error() }

// Unwrap returns the model's error.
func (e *ModelError) Unwrap() error { return e.Err }

// customTarget resolves a name of Config.Models: its provider wrapped so
// that record and replay apply to it as to the built-in ones.
func (r *Router) customTarget(name string, p Provider) Target {
	prov, model, ok := strings.Cut(name, "/")
	if !ok {
		prov, model = name, name
	}
	info := ProviderInfo{Name: prov, Dialect: DialectModel, Local: KnownProviders[prov].Local}
	w := &recordedModel{name: name, inner: p, rec: r.cfg.Recorder, rp: r.cfg.Replayer}
	return Target{Provider: w, Info: info, Model: model, Full: name}
}

// recordedModel is a program's model under record or replay: its
// exchanges go to the record file (endpoint "generate", the request and
// answer in wireRequest and wireResponse form) and are answered from it.
type recordedModel struct {
	name  string
	inner Provider
	rec   *Recorder
	rp    *Replayer
}

type wireMedia struct {
	MIMEType string `json:"mime_type"`
	Data     []byte `json:"data,omitempty"`
	URL      string `json:"url,omitempty"`
}

type wirePart struct {
	Text       string      `json:"text,omitempty"`
	Media      *wireMedia  `json:"media,omitempty"`
	ToolCall   *ToolCall   `json:"tool_call,omitempty"`
	ToolResult *ToolResult `json:"tool_result,omitempty"`
}

type wireMessage struct {
	Role  string     `json:"role"`
	Parts []wirePart `json:"parts"`
}

type wireRequest struct {
	Model       string         `json:"model"`
	System      string         `json:"system,omitempty"`
	Prompt      string         `json:"prompt,omitempty"`
	Attachment  any            `json:"attachment,omitempty"`
	Media       []wireMedia    `json:"media,omitempty"`
	Messages    []wireMessage  `json:"messages,omitempty"`
	Schema      map[string]any `json:"schema,omitempty"`
	Tools       []ToolDef      `json:"tools,omitempty"`
	MaxTokens   int            `json:"max_tokens,omitempty"`
	Temperature *float64       `json:"temperature,omitempty"`
}

type wireResponse struct {
	Content      string     `json:"content"`
	ToolCalls    []ToolCall `json:"tool_calls,omitempty"`
	FinishReason string     `json:"finish_reason,omitempty"`
	Model        string     `json:"model,omitempty"`
	Usage        Usage      `json:"usage"`
	CostUSD      *float64   `json:"cost_usd,omitempty"`
}

func toWireMedia(m Media) wireMedia { return wireMedia{MIMEType: m.MIMEType, Data: m.Data, URL: m.URL} }

func (w *recordedModel) wire(req Request) wireRequest {
	out := wireRequest{Model: w.name, System: req.System, Prompt: req.Prompt, Attachment: req.Attachment,
		Schema: req.Schema, Tools: req.Tools, MaxTokens: req.MaxTokens, Temperature: req.Temperature}
	for _, m := range req.Media {
		out.Media = append(out.Media, toWireMedia(m))
	}
	for _, m := range req.Messages {
		wm := wireMessage{Role: m.Role}
		for _, p := range m.Parts {
			wp := wirePart{Text: p.Text, ToolCall: p.ToolCall, ToolResult: p.ToolResult}
			if p.Media != nil {
				mm := toWireMedia(*p.Media)
				wp.Media = &mm
			}
			wm.Parts = append(wm.Parts, wp)
		}
		out.Messages = append(out.Messages, wm)
	}
	return out
}

// Complete asks the model, recording the exchange, or answers from the
// replay file.
func (w *recordedModel) Complete(ctx context.Context, req Request) (*Response, error) {
	if w.rec == nil && w.rp == nil {
		return w.call(ctx, req)
	}
	body, err := marshal(w.wire(req))
	if err != nil {
		return nil, fmt.Errorf("encoding the request: %w", err)
	}
	if w.rp != nil {
		status, raw, err := w.rp.answer(ctx, "generate", body)
		if err != nil {
			return nil, err
		}
		if status != http.StatusOK {
			return nil, &ModelError{Provider: w.name, Err: fmt.Errorf("recorded failure: %s", raw)}
		}
		var wr wireResponse
		if err := json.Unmarshal(raw, &wr); err != nil {
			return nil, &ModelError{Provider: w.name, Err: fmt.Errorf("recorded answer: %w", err)}
		}
		if req.OnDelta != nil && wr.Content != "" && len(wr.ToolCalls) == 0 {
			if err := req.OnDelta(wr.Content); err != nil {
				return nil, &StreamError{Provider: w.name, Err: err}
			}
		}
		return &Response{Content: wr.Content, ToolCalls: wr.ToolCalls, FinishReason: wr.FinishReason, Model: wr.Model,
			Usage: wr.Usage, ProviderCostUSD: wr.CostUSD, Tries: 1}, nil
	}
	resp, err := w.call(ctx, req)
	if err != nil {
		return resp, err
	}
	out, err := marshal(wireResponse{Content: resp.Content, ToolCalls: resp.ToolCalls, FinishReason: resp.FinishReason,
		Model: resp.Model, Usage: resp.Usage, CostUSD: resp.ProviderCostUSD})
	if err == nil {
		err = w.rec.record(ctx, "/generate", body, http.StatusOK, out)
	}
	return resp, err
}

// call asks the model; its errors other than the context's are
// *ModelError (unless already one of this package's).
func (w *recordedModel) call(ctx context.Context, req Request) (*Response, error) {
	resp, err := w.inner.Complete(ctx, req)
	if err == nil {
		if resp == nil {
			return nil, &ModelError{Provider: w.name, Err: errors.New("no answer and no error")}
		}
		return resp, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	var (
		me *ModelError
		se *StreamError
		re *RefusalError
		te *TruncatedError
		um *UnsupportedMediaError
	)
	if errors.As(err, &me) || errors.As(err, &se) || errors.As(err, &re) || errors.As(err, &te) || errors.As(err, &um) {
		return resp, err
	}
	return resp, &ModelError{Provider: w.name, Err: err}
}
