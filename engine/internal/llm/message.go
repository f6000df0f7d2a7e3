package llm

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// Roles of a Message.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one turn of a conversation after (or instead of) the user
// turn a Request's Prompt makes: the model's tool calls, their results,
// more user turns.
type Message struct {
	Role  string
	Parts []Part
}

// Part is one piece of a Message: exactly one field is set.
type Part struct {
	Text       string
	Media      *Media
	ToolCall   *ToolCall
	ToolResult *ToolResult
}

// Media is an image, audio clip or document sent as its own content part:
// its bytes (Data) or where the provider fetches it (URL).
type Media struct {
	MIMEType string
	Data     []byte
	URL      string
}

// ToolDef is a tool the model may call: its name, what it does, and the
// JSON Schema of its arguments (an object).
type ToolDef struct {
	Name, Description string
	Schema            map[string]any
}

// ToolCall is one call the model asked for; Args is a JSON object.
type ToolCall struct {
	ID, Name string
	Args     json.RawMessage
}

// ToolResult answers the ToolCall with the same ID: Content is JSON (an
// error's message is a JSON string).
type ToolResult struct {
	ID, Name string
	Content  json.RawMessage
	IsError  bool
}

// UnsupportedMediaError refuses, before any request, media a provider
// cannot take.
type UnsupportedMediaError struct {
	Provider, MIMEType, Reason string
}

func (e *UnsupportedMediaError) Error() string {
	return fmt.Sprintf("%s cannot take %s input: %s", e.Provider, e.MIMEType, e.Reason)
}

// mediaKind is "image", "audio", "pdf" or "" (anything else).
func mediaKind(mime string) string {
	switch {
	case strings.HasPrefix(mime, "image/"):
		return "image"
	case strings.HasPrefix(mime, "audio/"):
		return "audio"
	case mime == "application/pdf":
		return "pdf"
	}
	return ""
}

// dataURL is m's bytes as a data: URL.
func dataURL(m *Media) string {
	return "data:" + m.MIMEType + ";base64," + base64.StdEncoding.EncodeToString(m.Data)
}

// argsObject is a tool call's arguments as a JSON value for the bodies
// that carry them as an object ({} when empty).
func argsObject(a json.RawMessage) json.RawMessage {
	if len(strings.TrimSpace(string(a))) == 0 {
		return json.RawMessage("{}")
	}
	return a
}

// resultText is a tool result's content as the text a provider takes.
func resultText(r *ToolResult) string {
	var s string
	if json.Unmarshal(r.Content, &s) == nil {
		return s
	}
	if len(r.Content) == 0 {
		return "null"
	}
	return string(r.Content)
}

// CheckMedia refuses, before any request, media the dialect's provider
// cannot take: a provider that answers only text is told in Reason.
func CheckMedia(provider, dialect string, media []Media) error {
	for i := range media {
		m := &media[i]
		kind := mediaKind(m.MIMEType)
		if len(m.Data) == 0 && m.URL == "" {
			return &UnsupportedMediaError{Provider: provider, MIMEType: m.MIMEType, Reason: "the media has neither Data nor URL"}
		}
		switch dialect {
		case DialectOpenAI:
			switch {
			case kind == "":
				return &UnsupportedMediaError{Provider: provider, MIMEType: m.MIMEType, Reason: "OpenAI-compatible chat takes images, wav/mp3 audio and PDF files only"}
			case kind == "audio" && m.MIMEType != "audio/wav" && m.MIMEType != "audio/mpeg" && m.MIMEType != "audio/mp3":
				return &UnsupportedMediaError{Provider: provider, MIMEType: m.MIMEType, Reason: "OpenAI-compatible chat takes wav or mp3 audio only"}
			case kind != "image" && m.URL != "":
				return &UnsupportedMediaError{Provider: provider, MIMEType: m.MIMEType, Reason: "only images may be sent by URL; send the bytes (Data)"}
			}
		case DialectAnthropic:
			switch {
			case kind == "audio", kind == "":
				return &UnsupportedMediaError{Provider: provider, MIMEType: m.MIMEType, Reason: "Anthropic takes images and PDF documents only"}
			}
		case DialectGemini:
			if m.MIMEType == "" {
				return &UnsupportedMediaError{Provider: provider, MIMEType: "media", Reason: "Gemini needs the MIME type"}
			}
		}
	}
	return nil
}

// allMedia is every media part of req: the user turn's and its messages'.
func allMedia(req Request) []Media {
	media := append([]Media(nil), req.Media...)
	for _, m := range req.Messages {
		for _, p := range m.Parts {
			if p.Media != nil {
				media = append(media, *p.Media)
			}
		}
	}
	return media
}

// --- OpenAI-compatible encoding ---

// openAIMedia is one media part of an OpenAI-compatible user turn.
func openAIMedia(m *Media) map[string]any {
	switch mediaKind(m.MIMEType) {
	case "image":
		u := m.URL
		if u == "" {
			u = dataURL(m)
		}
		return map[string]any{"type": "image_url", "image_url": map[string]any{"url": u}}
	case "audio":
		format := "wav"
		if m.MIMEType != "audio/wav" {
			format = "mp3"
		}
		return map[string]any{"type": "input_audio", "input_audio": map[string]any{"data": base64.StdEncoding.EncodeToString(m.Data), "format": format}}
	}
	return map[string]any{"type": "file", "file": map[string]any{"filename": "document.pdf", "file_data": dataURL(m)}}
}

// openAIMessages encodes msgs as Chat Completions messages: a tool turn
// is one "tool" message per result.
func openAIMessages(msgs []Message) []any {
	var out []any
	for _, m := range msgs {
		switch m.Role {
		case RoleTool:
			for _, p := range m.Parts {
				if r := p.ToolResult; r != nil {
					out = append(out, map[string]any{"role": "tool", "tool_call_id": r.ID, "content": resultText(r)})
				}
			}
		case RoleAssistant:
			msg := map[string]any{"role": "assistant"}
			var text []string
			var calls []any
			for _, p := range m.Parts {
				switch {
				case p.ToolCall != nil:
					calls = append(calls, map[string]any{"id": p.ToolCall.ID, "type": "function",
						"function": map[string]any{"name": p.ToolCall.Name, "arguments": string(argsObject(p.ToolCall.Args))}})
				case p.Text != "":
					text = append(text, p.Text)
				}
			}
			msg["content"] = strings.Join(text, "\n")
			if len(calls) > 0 {
				msg["tool_calls"] = calls
				if len(text) == 0 {
					msg["content"] = nil
				}
			}
			out = append(out, msg)
		default:
			var parts []any
			for _, p := range m.Parts {
				switch {
				case p.Media != nil:
					parts = append(parts, openAIMedia(p.Media))
				case p.Text != "":
					parts = append(parts, map[string]any{"type": "text", "text": p.Text})
				}
			}
			out = append(out, map[string]any{"role": m.Role, "content": parts})
		}
	}
	return out
}

func openAITools(tools []ToolDef) []any {
	out := make([]any, 0, len(tools))
	for _, t := range tools {
		out = append(out, map[string]any{"type": "function", "function": map[string]any{
			"name": t.Name, "description": t.Description, "parameters": t.Schema}})
	}
	return out
}

// --- Anthropic encoding ---

func anthropicMedia(m *Media) map[string]any {
	typ := "image"
	if mediaKind(m.MIMEType) == "pdf" {
		typ = "document"
	}
	if m.URL != "" {
		return map[string]any{"type": typ, "source": map[string]any{"type": "url", "url": m.URL}}
	}
	return map[string]any{"type": typ, "source": map[string]any{"type": "base64", "media_type": m.MIMEType,
		"data": base64.StdEncoding.EncodeToString(m.Data)}}
}

// anthropicMessages encodes msgs as Messages API turns: tool results are
// a user turn of tool_result blocks.
func anthropicMessages(msgs []Message) []any {
	var out []any
	for _, m := range msgs {
		role := m.Role
		var blocks []any
		for _, p := range m.Parts {
			switch {
			case p.ToolResult != nil:
				r := p.ToolResult
				b := map[string]any{"type": "tool_result", "tool_use_id": r.ID, "content": resultText(r)}
				if r.IsError {
					b["is_error"] = true
				}
				blocks = append(blocks, b)
			case p.ToolCall != nil:
				blocks = append(blocks, map[string]any{"type": "tool_use", "id": p.ToolCall.ID, "name": p.ToolCall.Name,
					"input": argsObject(p.ToolCall.Args)})
			case p.Media != nil:
				blocks = append(blocks, anthropicMedia(p.Media))
			case p.Text != "":
				blocks = append(blocks, map[string]any{"type": "text", "text": p.Text})
			}
		}
		if role == RoleTool {
			role = RoleUser
		}
		out = append(out, map[string]any{"role": role, "content": blocks})
	}
	return out
}

func anthropicTools(tools []ToolDef) []any {
	out := make([]any, 0, len(tools)+1)
	for _, t := range tools {
		out = append(out, map[string]any{"name": t.Name, "description": t.Description, "input_schema": TrimmedSchema(t.Schema)})
	}
	return out
}
