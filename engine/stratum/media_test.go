package stratum

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

type photoIn struct {
	Question string  `json:"question"`
	Photo    Media   `json:"photo"`
	Extra    []Media `json:"extra"`
}

type caption struct {
	Caption string `json:"caption"`
}

// png is the 8-byte PNG signature with a little more: enough to be a PNG
// to whoever reads its first bytes.
var png = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")

// Rule 20: a Media input is a media part of the user turn — an image_url
// part with a data URL for an OpenAI-compatible provider — never in the
// prompt text; the trace keeps its size, not its bytes.
func TestMediaInputIsAContentPart(t *testing.T) {
	f := newFake(t, `{"caption":"a cat"}`)
	rt, ctx := f.runtime(t, Options{})
	fn := MustInfer("describe", Spec[photoIn, caption]{Intent: "Describe the photo"})
	in := photoIn{Question: "What is it?", Photo: Media{MIMEType: "image/png", Data: png},
		Extra: []Media{{MIMEType: "image/jpeg", URL: "https://example.com/b.jpg"}}}
	if got, err := fn.Call(ctx, in); err != nil || got.Caption != "a cat" {
		t.Fatalf("%+v, %v", got, err)
	}
	f.mu.Lock()
	body := f.bodies[0]
	f.mu.Unlock()
	msgs := body["messages"].([]any)
	user := msgs[len(msgs)-1].(map[string]any)
	parts := user["content"].([]any)
	text := parts[0].(map[string]any)["text"].(string)
	b64 := base64.StdEncoding.EncodeToString(png)
	if len(parts) != 3 || strings.Contains(text, b64) || strings.Contains(text, "photo:") || strings.Contains(text, "extra:") ||
		!strings.Contains(text, "question: What is it?") {
		t.Fatalf("parts %v", parts)
	}
	img := fmt.Sprint(parts[1])
	if !strings.Contains(img, "image_url") || !strings.Contains(img, "data:image/png;base64,"+b64) || !strings.Contains(fmt.Sprint(parts[2]), "https://example.com/b.jpg") {
		t.Fatalf("media parts %v", parts[1:])
	}
	inputs := rt.Trace()[0].Inputs.(map[string]any)
	if s := fmt.Sprint(inputs["photo"]); strings.Contains(s, b64) || !strings.Contains(s, "bytes:") {
		t.Fatalf("trace input %v", s)
	}
}

// Rule 20: a provider that cannot take the media type fails before any
// request with a clear error; a Media without bytes or URL is refused.
func TestUnsupportedMediaRefusedBeforeRequest(t *testing.T) {
	srv := newCapture(t, "application/json", func(int, map[string]any) string { return `{}` })
	t.Setenv("STRATUM_HOME", t.TempDir())
	env := map[string]string{"ANTHROPIC_BASE_URL": srv.srv.URL, "ANTHROPIC_API_KEY": "k", "STRATUM_MODEL": "anthropic/claude-sonnet-4-6"}
	rt, err := New(Options{Getenv: func(k string) string { return env[k] }, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	ctx := WithRuntime(context.Background(), rt)
	fn := MustInfer("transcribe", Spec[photoIn, caption]{Intent: "Transcribe"})
	_, err = fn.Call(ctx, photoIn{Photo: Media{MIMEType: "audio/wav", Data: []byte("RIFF")}})
	if err == nil || !errors.Is(err, ErrStratum) || !strings.Contains(err.Error(), "anthropic cannot take audio/wav input") {
		t.Fatalf("err = %v", err)
	}
	_, err = fn.Call(ctx, photoIn{Photo: Media{MIMEType: "image/png"}})
	if err == nil || !strings.Contains(err.Error(), "a Media needs a MIMEType and its Data or a URL") {
		t.Fatalf("err = %v", err)
	}
	if n := len(srv.bodies); n != 0 {
		t.Fatalf("%d requests were sent", n)
	}
}
