package llm

import (
	"context"
	"testing"
)

// Request bodies ask for at most the model's output limit (providers
// answer HTTP 400 above it): a token budget of 100,000 sent 100,000 for
// gpt-4o-mini and 99,760 for claude-sonnet-4-5 before, and Anthropic
// without a budget now gets the model's value.
func TestRequestMaxTokens(t *testing.T) {
	tests := []struct {
		name      string
		anthropic bool
		model     string
		requested int
		want      int // 0: the field is absent
	}{
		{"openai budget above the limit", false, "gpt-4o-mini", 100_000, 16_384},
		{"openai budget below the limit", false, "gpt-4o-mini", 321, 321},
		{"openai no budget", false, "gpt-4o-mini", 0, 0},
		{"openai dated model", false, "gpt-4o-mini-2024-07-18", 50_000, 16_384},
		{"openai gpt-4.1", false, "gpt-4.1", 1_000_000, 32_768},
		{"openai o3", false, "o3-mini", 1_000_000, 100_000},
		{"openrouter vendor prefix", false, "anthropic/claude-sonnet-4.5", 100_000, 64_000},
		{"unknown model", false, "llama3.2", 100_000, DefaultOutputTokens},
		{"anthropic budget above the limit", true, "claude-sonnet-4-5", 99_760, 64_000},
		{"anthropic budget below the limit", true, "claude-sonnet-4-5", 1_000, 1_000},
		{"anthropic no budget", true, "claude-sonnet-4-5", 0, 64_000},
		{"anthropic opus 4.1", true, "claude-opus-4-1-20250805", 0, 32_000},
		{"anthropic 3.5 haiku", true, "claude-3-5-haiku-latest", 0, 8_192},
		{"anthropic unknown model", true, "claude-next", 100_000, DefaultOutputTokens},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := Request{Model: tt.model, Prompt: "p", Schema: sentiment, MaxTokens: tt.requested}
			var body map[string]any
			var err error
			field := "max_completion_tokens"
			if tt.anthropic {
				body, err = (&Anthropic{}).Body(req)
				field = "max_tokens"
			} else {
				body, err = (&OpenAI{MaxTokensField: field}).Body(req)
			}
			if err != nil {
				t.Fatal(err)
			}
			got, present := body[field]
			switch {
			case tt.want == 0 && present:
				t.Fatalf("%s = %v, want it absent", field, got)
			case tt.want != 0 && got != tt.want:
				t.Fatalf("%s = %v, want %d", field, got, tt.want)
			}
		})
	}
}

// The body that goes over the wire carries the capped value.
func TestWireMaxTokensCapped(t *testing.T) {
	srv := newFake(t, reply(200, openAIAnswer(`{"label":"positive","confidence":0.9}`)))
	c := &OpenAI{Name: "openai", BaseURL: srv.URL + "/v1", APIKey: "sk-test", MaxTokensField: "max_completion_tokens"}
	if _, err := c.Complete(context.Background(), Request{Model: "gpt-4o-mini", Prompt: "Classify", Schema: sentiment, MaxTokens: 100_000}); err != nil {
		t.Fatal(err)
	}
	if got := srv.bodies[0]["max_completion_tokens"]; got != float64(16_384) {
		t.Fatalf("max_completion_tokens on the wire = %v", got)
	}
}
