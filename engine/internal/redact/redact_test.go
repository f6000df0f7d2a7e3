package redact

import (
	"bytes"
	"testing"
)

func TestRedactor(t *testing.T) {
	x := FromEnv([]string{"OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwxyz", "GITHUB_TOKEN=ghp_0123456789abcdefghij", "SHORT_TOKEN=abc",
		"OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer%20otlp-token-123456", "HOME=/root/notasecret"})
	for in, want := range map[string]string{
		"key sk-abcdefghijklmnopqrstuvwxyz!":  "key sk-…[redacted]!",
		"gh ghp_0123456789abcdefghij":         "gh ghp_…[redacted]",
		"otlp otlp-token-123456 abc":          "otlp [redacted] abc",
		"home /root/notasecret is not masked": "home /root/notasecret is not masked",
	} {
		if got := x.String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
	var b bytes.Buffer
	if _, err := x.Writer(&b).Write([]byte("sk-abcdefghijklmnopqrstuvwxyz\n")); err != nil || b.String() != "sk-…[redacted]\n" {
		t.Errorf("Writer wrote %q, %v", b.String(), err)
	}
	var none *Redactor
	if none.String("sk-abcdefghijklmnopqrstuvwxyz") != "sk-abcdefghijklmnopqrstuvwxyz" || !New("short").Empty() {
		t.Error("an empty redactor masks something")
	}
}
