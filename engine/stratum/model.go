package stratum

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/stratum-go/stratum/engine/internal/llm"
)

// A Model answers one request. The built-in providers are Models
// (NewProvider), and any other provider or a test double plugs in the same
// way through Options.Models. The library calls Generate once per attempt
// and once per tool round; record and replay, pricing, budgets and traces
// apply to every Model alike.
//
// Generate must honour ctx. An error it returns fails the attempt as a
// *ProviderError (a failure of the provider, never of an answer), which is
// not retried; return a *ProviderError with Retryable and Status set to
// say more.
type Model interface {
	Generate(ctx context.Context, req *ModelRequest) (*ModelResponse, error)
}

// ModelRequest is one request to a Model.
type ModelRequest struct {
	// Model is the provider-local model name ("gpt-4o-mini").
	Model string
	// Messages are the conversation: a system message, the compiled prompt
	// as the user turn (its text, any attached data as a second text part,
	// any Media parts), then the tool rounds (the model's calls and their
	// results).
	Messages []Message
	// Schema is the output contract as JSON Schema with an object root
	// (an answer that is not an object is asked for as {"value": …}); nil:
	// any JSON object.
	Schema map[string]any
	// Tools are the tools the model may call this turn.
	Tools []ToolSpec
	// Temperature, when set, is the sampling temperature.
	Temperature *float64
	// MaxTokens caps the answer's tokens (0: the provider's default).
	MaxTokens int
	// OnChunk, when set, asks for the answer streamed: call it with each
	// piece of the answer's text as it arrives, before returning the whole
	// answer. An error it returns must end Generate with that error.
	OnChunk func(Chunk) error
}

// Role is the author of a Message.
type Role string

// The roles of a conversation.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one turn of a conversation.
type Message struct {
	Role  Role
	Parts []Part
}

// Part is one piece of a Message; exactly one field is set.
type Part struct {
	Text       string
	Media      *Media
	ToolCall   *ToolCall
	ToolResult *ToolResult
}

// Media is an image, an audio clip or a document: its bytes (Data) or a
// URL the provider fetches. MIMEType names it: image/png, image/jpeg,
// audio/wav, audio/mpeg, application/pdf, … An input field of type Media
// or []Media is sent as a media part of the user turn, never in the
// prompt text; a provider that cannot take the type is refused before any
// request.
type Media struct {
	MIMEType string `json:"mime_type"`
	Data     []byte `json:"data,omitempty"`
	URL      string `json:"url,omitempty"`
}

// ToolSpec describes a tool to a Model: its name, what it does and the
// JSON Schema of its arguments.
type ToolSpec struct {
	Name, Description string
	Schema            map[string]any
}

// ToolCall is a call the model asked for: Args is a JSON object.
type ToolCall struct {
	ID, Name string
	Args     json.RawMessage
}

// ToolResult answers the ToolCall with the same ID. Content is JSON; a
// failed call (IsError) carries its message as a JSON string.
type ToolResult struct {
	ID, Name string
	Content  json.RawMessage
	IsError  bool
}

// Chunk is a piece of a streamed answer: new text, or a tool call.
type Chunk struct {
	Text     string
	ToolCall *ToolCall
}

// ModelResponse is a Model's answer: the assistant message (the answer's
// text, or tool calls), its usage, why it finished and the model that
// answered.
type ModelResponse struct {
	Message      Message
	Usage        Usage
	FinishReason string
	Model        string
}

// Usage is what a request spent. CostUSD 0 means: priced from the price
// table by the model's name ("provider/model"), unknown when the table
// does not know it.
type Usage struct {
	InputTokens, OutputTokens int64
	CostUSD                   float64
}

// --- conversions between the library's terms and the clients' ---

func toLLMMedia(m *Media) *llm.Media {
	if m == nil {
		return nil
	}
	return &llm.Media{MIMEType: m.MIMEType, Data: m.Data, URL: m.URL}
}

func fromLLMMedia(m *llm.Media) *Media {
	if m == nil {
		return nil
	}
	return &Media{MIMEType: m.MIMEType, Data: m.Data, URL: m.URL}
}

func toLLMMessages(msgs []Message) []llm.Message {
	out := make([]llm.Message, 0, len(msgs))
	for _, m := range msgs {
		lm := llm.Message{Role: string(m.Role), Parts: make([]llm.Part, 0, len(m.Parts))}
		for _, p := range m.Parts {
			lp := llm.Part{Text: p.Text, Media: toLLMMedia(p.Media)}
			if c := p.ToolCall; c != nil {
				lp.ToolCall = &llm.ToolCall{ID: c.ID, Name: c.Name, Args: c.Args}
			}
			if r := p.ToolResult; r != nil {
				lp.ToolResult = &llm.ToolResult{ID: r.ID, Name: r.Name, Content: r.Content, IsError: r.IsError}
			}
			lm.Parts = append(lm.Parts, lp)
		}
		out = append(out, lm)
	}
	return out
}

func fromLLMMessages(msgs []llm.Message) []Message {
	out := make([]Message, 0, len(msgs))
	for _, m := range msgs {
		pm := Message{Role: Role(m.Role), Parts: make([]Part, 0, len(m.Parts))}
		for _, p := range m.Parts {
			pp := Part{Text: p.Text, Media: fromLLMMedia(p.Media)}
			if c := p.ToolCall; c != nil {
				pp.ToolCall = &ToolCall{ID: c.ID, Name: c.Name, Args: c.Args}
			}
			if r := p.ToolResult; r != nil {
				pp.ToolResult = &ToolResult{ID: r.ID, Name: r.Name, Content: r.Content, IsError: r.IsError}
			}
			pm.Parts = append(pm.Parts, pp)
		}
		out = append(out, pm)
	}
	return out
}

// modelProvider is a Model as the engine's client of a provider: the
// compiled request becomes a ModelRequest and the answer a client
// response.
type modelProvider struct {
	name string
	m    Model
}

// Complete sends one request of the inference loop to the Model and turns
// its answer back into the loop's response.
func (p modelProvider) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	mreq := &ModelRequest{Model: req.Model, Schema: req.Schema, Temperature: req.Temperature, MaxTokens: req.MaxTokens}
	if req.System != "" {
		mreq.Messages = append(mreq.Messages, Message{Role: RoleSystem, Parts: []Part{{Text: req.System}}})
	}
	if req.Prompt != "" || req.Attachment != nil || len(req.Media) > 0 {
		user := Message{Role: RoleUser, Parts: []Part{{Text: req.Prompt}}}
		if req.Attachment != nil {
			b, err := json.Marshal(req.Attachment)
			if err != nil {
				return nil, err
			}
			user.Parts = append(user.Parts, Part{Text: "Attached data (JSON):\n" + string(b)})
		}
		for i := range req.Media {
			user.Parts = append(user.Parts, Part{Media: fromLLMMedia(&req.Media[i])})
		}
		mreq.Messages = append(mreq.Messages, user)
	}
	mreq.Messages = append(mreq.Messages, fromLLMMessages(req.Messages)...)
	for _, t := range req.Tools {
		mreq.Tools = append(mreq.Tools, ToolSpec{Name: t.Name, Description: t.Description, Schema: t.Schema})
	}
	if req.OnDelta != nil {
		mreq.OnChunk = func(c Chunk) error {
			if c.Text == "" {
				return nil
			}
			return req.OnDelta(c.Text)
		}
	}
	resp, err := p.m.Generate(ctx, mreq)
	if err != nil {
		return nil, err
	}
	if resp == nil {
		return nil, errors.New("the model returned no answer and no error")
	}
	out := &llm.Response{Model: resp.Model, FinishReason: resp.FinishReason, Tries: 1,
		Usage: llm.Usage{Input: resp.Usage.InputTokens, Output: resp.Usage.OutputTokens}}
	if resp.Usage.CostUSD != 0 {
		c := resp.Usage.CostUSD
		out.ProviderCostUSD = &c
	}
	var text string
	for _, part := range resp.Message.Parts {
		switch {
		case part.ToolCall != nil:
			out.ToolCalls = append(out.ToolCalls, llm.ToolCall{ID: part.ToolCall.ID, Name: part.ToolCall.Name, Args: part.ToolCall.Args})
		default:
			text += part.Text
		}
	}
	out.Content = text
	return out, nil
}
