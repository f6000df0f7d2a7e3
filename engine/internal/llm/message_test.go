package llm

import (
	"encoding/json"
	"strings"
	"testing"
)

// Each dialect encodes tools, a tool round and media in its own shape.
func TestToolRoundBodies(t *testing.T) {
	call := ToolCall{ID: "call_1", Name: "weather", Args: json.RawMessage(`{"city":"Oslo"}`)}
	req := Request{Model: "m", Prompt: "Weather?", Schema: map[string]any{"type": "object"},
		Media: []Media{{MIMEType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}}},
		Tools: []ToolDef{{Name: "weather", Description: "w", Schema: map[string]any{"type": "object"}}},
		Messages: []Message{
			{Role: RoleAssistant, Parts: []Part{{ToolCall: &call}}},
			{Role: RoleTool, Parts: []Part{{ToolResult: &ToolResult{ID: "call_1", Name: "weather", Content: json.RawMessage(`{"temp":-3}`)}}}},
		}}
	for _, c := range []struct {
		name string
		body func() (map[string]any, error)
		want []string
	}{
		{"openai", func() (map[string]any, error) { return (&OpenAI{Name: "openai"}).Body(req) }, []string{
			`"tools":[{"function":{"description":"w","name":"weather","parameters":{"type":"object"}},"type":"function"}]`,
			`"tool_calls":[{"function":{"arguments":"{\"city\":\"Oslo\"}","name":"weather"},"id":"call_1","type":"function"}]`,
			`{"content":"{\"temp\":-3}","role":"tool","tool_call_id":"call_1"}`,
			`{"image_url":{"url":"data:image/png;base64,iVBORw=="},"type":"image_url"}`}},
		{"anthropic", func() (map[string]any, error) { return (&Anthropic{}).Body(req) }, []string{
			`"tool_choice":{"type":"any"}`,
			`{"id":"call_1","input":{"city":"Oslo"},"name":"weather","type":"tool_use"}`,
			`{"content":[{"content":"{\"temp\":-3}","tool_use_id":"call_1","type":"tool_result"}],"role":"user"}`,
			`{"source":{"data":"iVBORw==","media_type":"image/png","type":"base64"},"type":"image"}`}},
		{"gemini", func() (map[string]any, error) { return (&Gemini{}).Body(req) }, []string{
			`"toolConfig":{"functionCallingConfig":{"mode":"ANY"}}`,
			`{"parts":[{"functionCall":{"args":{"city":"Oslo"},"id":"call_1","name":"weather"}}],"role":"model"}`,
			`{"functionResponse":{"id":"call_1","name":"weather","response":{"result":{"temp":-3}}}}`,
			`{"inlineData":{"data":"iVBORw==","mimeType":"image/png"}}`}},
	} {
		body, err := c.body()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		b, _ := marshal(body)
		for _, w := range c.want {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s: body lacks %s\n%s", c.name, w, b)
			}
		}
	}
}

// Media a provider cannot take is refused before any request.
func TestUnsupportedMedia(t *testing.T) {
	audio := Request{Model: "m", Prompt: "x", Media: []Media{{MIMEType: "audio/wav", Data: []byte("RIFF")}}}
	if _, err := (&Anthropic{}).Body(audio); err == nil || !strings.Contains(err.Error(), "images and PDF documents only") {
		t.Errorf("anthropic audio: %v", err)
	}
	video := Request{Model: "m", Prompt: "x", Media: []Media{{MIMEType: "video/mp4", Data: []byte("x")}}}
	if _, err := (&OpenAI{Name: "openai"}).Body(video); err == nil || !strings.Contains(err.Error(), "images, wav/mp3 audio and PDF") {
		t.Errorf("openai video: %v", err)
	}
}

// Tool calls in answers: Anthropic's tool_use blocks other than "output",
// Gemini's functionCall parts.
func TestToolCallAnswers(t *testing.T) {
	a, err := (&Anthropic{}).parse([]byte(`{"stop_reason":"tool_use","content":[{"type":"text","text":"let me look"},{"type":"tool_use","id":"t1","name":"weather","input":{"city":"Oslo"}}],"usage":{}}`))
	if err != nil || len(a.ToolCalls) != 1 || a.ToolCalls[0].ID != "t1" || a.Content != "let me look" || a.FromTool {
		t.Fatalf("anthropic %+v %v", a, err)
	}
	acc := &geminiAnswer{}
	var r geminiResponse
	_ = json.Unmarshal([]byte(`{"candidates":[{"finishReason":"STOP","content":{"parts":[{"functionCall":{"name":"weather","args":{"city":"Rome"}}},{"functionCall":{"name":"output","args":{"x":1}}}]}}]}`), &r)
	acc.add(&r)
	g, err := acc.response("gemini", true)
	if err != nil || len(g.ToolCalls) != 1 || g.ToolCalls[0].ID != "call_1" || string(g.ToolCalls[0].Args) != `{"city":"Rome"}` {
		t.Fatalf("gemini %+v %v", g, err)
	}
}
