package llm

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// A request body encodes as the maps it stands for (sorted keys, no HTML
// escaping), so the structs of the hot path and the cached schema
// encodings leave the bytes on the wire, and the recordings keyed on them,
// unchanged; a cached projection gives the same body as a fresh one; the
// OpenAI body sent (a struct when nothing is merged into it) is Body's.
func TestBodyEncodesAsMaps(t *testing.T) {
	temp := 0.7
	free := map[string]any{"type": "object", "properties": map[string]any{"meta": map[string]any{"type": "object"}}}
	wrapped, _ := ObjectRoot(map[string]any{"type": "array", "items": map[string]any{"type": "string"}})
	call := ToolCall{ID: "call_1", Name: "weather", Args: json.RawMessage(`{"city":"Oslo"}`)}
	reqs := map[string]Request{
		"plain":      {Model: "gpt-4o-mini", System: "sys <b>", Prompt: "Classify & <tell>", Schema: sentiment, SchemaName: "output", MaxTokens: 99},
		"no system":  {Model: "m", Prompt: "p", Schema: sentiment, Temperature: &temp},
		"not strict": {Model: "m", Prompt: "p", Schema: free},
		"wrapped":    {Model: "m", Prompt: "p", Schema: wrapped},
		"no schema":  {Model: "m", Prompt: "p"},
		"attachment": {Model: "m", Prompt: "p", Schema: sentiment, Attachment: map[string]any{"doc": "secret <b>"}},
		"media": {Model: "m", Prompt: "p", Schema: sentiment,
			Media: []Media{{MIMEType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}}}},
		"tools": {Model: "m", Prompt: "p", Schema: sentiment,
			Tools: []ToolDef{{Name: "weather", Description: "w", Schema: map[string]any{"type": "object"}}},
			Messages: []Message{
				{Role: RoleAssistant, Parts: []Part{{ToolCall: &call}}},
				{Role: RoleTool, Parts: []Part{{ToolResult: &ToolResult{ID: "call_1", Name: "weather", Content: json.RawMessage(`{"temp":-3}`)}}}},
			}},
	}
	clients := map[string]func(Request) (map[string]any, error){
		"openai":    (&OpenAI{Name: "openai", Extra: map[string]any{"provider": map[string]any{"require_parameters": true}}}).Body,
		"nostrict":  (&OpenAI{Name: "vllm", NoStrict: true, MaxTokensField: "max_completion_tokens"}).Body,
		"anthropic": (&Anthropic{}).Body,
		"gemini":    (&Gemini{}).Body,
	}
	openai := []*OpenAI{
		{Name: "openai", MaxTokensField: "max_completion_tokens"},
		{Name: "groq"},
		{Name: "vllm", NoStrict: true, MaxTokensField: "max_output"},
		{Name: "openrouter", Extra: map[string]any{"provider": map[string]any{"require_parameters": true}}},
	}
	for _, c := range openai {
		for name, req := range reqs {
			for _, r := range []Request{req, {Model: "gpt-4o-mini", Prompt: "p", Extra: map[string]any{"seed": 1}}} {
				body, err := c.Body(r)
				if err != nil {
					t.Fatalf("%s %s: %v", c.Name, name, err)
				}
				want, _ := marshal(body)
				got, err := c.encodeBody(r)
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("%s %s: the wire body differs from Body's (%v)\nwire %s\nBody %s", c.Name, name, err, got, want)
				}
			}
		}
	}
	for cname, body := range clients {
		for name, req := range reqs {
			encode := func(key string) []byte {
				r := req
				r.SchemaKey = key
				b, err := body(r)
				if err != nil {
					t.Fatalf("%s %s: %v", cname, name, err)
				}
				enc, err := marshal(b)
				if err != nil {
					t.Fatalf("%s %s: %v", cname, name, err)
				}
				return enc
			}
			fresh := encode("")
			key := "test-" + name
			if first, cached := encode(key), encode(key); !bytes.Equal(first, fresh) || !bytes.Equal(cached, fresh) {
				t.Errorf("%s %s: a cached schema changes the body\nfresh  %s\nfirst  %s\ncached %s", cname, name, fresh, first, cached)
			}
			dec := json.NewDecoder(bytes.NewReader(fresh))
			dec.UseNumber()
			var asMaps any
			if err := dec.Decode(&asMaps); err != nil {
				t.Fatalf("%s %s: %v", cname, name, err)
			}
			again, _ := marshal(asMaps)
			if !bytes.Equal(again, fresh) {
				t.Errorf("%s %s: the body does not encode as its maps\nbody %s\nmaps %s", cname, name, fresh, again)
			}
		}
	}
}

// A target's full name is provider/model as resolved, whatever the case or
// alias written; the base URL variable is the provider's.
func TestFullNameAndBaseURLEnv(t *testing.T) {
	for _, c := range []struct{ model, prov, name, want string }{
		{"openai/gpt-4o-mini", "openai", "gpt-4o-mini", "openai/gpt-4o-mini"},
		{"OpenAI/gpt-4o-mini", "openai", "gpt-4o-mini", "openai/gpt-4o-mini"},
		{"llama.cpp/qwen", "llamacpp", "qwen", "llamacpp/qwen"},
		{"openrouter/anthropic/claude", "openrouter", "anthropic/claude", "openrouter/anthropic/claude"},
	} {
		if got := fullName(c.model, c.prov, c.name); got != c.want {
			t.Errorf("fullName(%q) = %q, want %q", c.model, got, c.want)
		}
	}
	for prov, want := range map[string]string{"openai": "OPENAI_BASE_URL", "llamacpp": "LLAMACPP_BASE_URL", "my-gw": "MY_GW_BASE_URL"} {
		if got := baseURLEnv(prov); got != want {
			t.Errorf("baseURLEnv(%q) = %q, want %q", prov, got, want)
		}
	}
}

// An OpenAI answer decodes as encoding/json decodes it, error text included.
func TestDecodeResponseAsEncodingJSON(t *testing.T) {
	for _, b := range []string{
		`{"id":"c1","model":"m","choices":[{"finish_reason":"stop","message":{"content":"{\"a\":1}"}}],"usage":{"prompt_tokens":100,"completion_tokens":20,"prompt_tokens_details":{"cached_tokens":40},"completion_tokens_details":{"reasoning_tokens":5},"cost":0.0012}}`,
		`{"choices":[{"finish_reason":"tool_calls","message":{"content":null,"tool_calls":[{"id":"t1","function":{"name":"w","arguments":"{\"city\":\"Oslo\"}"}}]}}]}`,
		`{"choices":[{"message":{"refusal":"no","content":""}}],"usage":null}`,
		`{"ID":"case","Choices":[],"extra":{"deep":[1,2,{"x":null}]}}`,
		`{"choices":[{"message":{"content":"\u00e9\ud83d\ude00 \ud800"}}]}`,
		`{"usage":{"prompt_tokens":1.5}}`, `{"usage":{"prompt_tokens":"7"}}`, `{"choices":{}}`, `{"id":1}`,
		`{"id":"a"} trailing`, `not json`, ``, `{"id":"a",}`, `[]`, `null`,
	} {
		var got, want openAIResponse
		gotErr := decodeResponse([]byte(b), &got)
		wantErr := json.Unmarshal([]byte(b), &want)
		switch {
		case (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()):
			t.Errorf("%.60s: error %v, encoding/json %v", b, gotErr, wantErr)
		case !reflect.DeepEqual(got, want):
			t.Errorf("%.60s:\n got  %+v\n want %+v", b, got, want)
		}
	}
}

// Anthropic's and Gemini's answers decode as encoding/json decodes them.
func TestDecodeDialectResponsesAsEncodingJSON(t *testing.T) {
	anthropic := []string{
		`{"id":"m1","model":"claude","stop_reason":"tool_use","content":[{"type":"text","text":"hm"},{"type":"tool_use","id":"t1","name":"output","input":{"a":[1,{"b":null}]}}],"usage":{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":3,"cache_creation_input_tokens":2}}`,
		`{"content":[{"type":"tool_use","input":"not an object"}]}`, "{\"content\":[{\"type\":\"tool_use\",\"input\": { \"a\" :\n [ 1 , 2 ] } }]}", `{"usage":{"input_tokens":"x"}}`, `{"content":{}}`, `{} x`, `nope`,
	}
	gemini := []string{
		`{"responseId":"r","modelVersion":"gemini-2.5","candidates":[{"finishReason":"STOP","content":{"parts":[{"text":"{\"a\":1}"},{"functionCall":{"id":"c","name":"output","args":{"a":1}}}]}}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":4,"thoughtsTokenCount":2,"cachedContentTokenCount":1}}`,
		`{"candidates":[{"content":{"parts":[{"text":1}]}}]}`, `{"promptFeedback":{"blockReason":"SAFETY"}}`, `{"candidates":null}`, `[1]`, ``,
	}
	for _, b := range anthropic {
		var got, want anthropicResponse
		compareResponse(t, b, decodeResponse([]byte(b), &got), json.Unmarshal([]byte(b), &want), got, want)
	}
	for _, b := range gemini {
		var got, want geminiResponse
		compareResponse(t, b, decodeResponse([]byte(b), &got), json.Unmarshal([]byte(b), &want), got, want)
	}
}

func compareResponse(t *testing.T, doc string, gotErr, wantErr error, got, want any) {
	t.Helper()
	switch {
	case (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()):
		t.Errorf("%.60s: error %v, encoding/json %v", doc, gotErr, wantErr)
	case !reflect.DeepEqual(got, want):
		t.Errorf("%.60s:\n got  %+v\n want %+v", doc, got, want)
	}
}
