package stratum_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stratum-go/stratum/engine/stratum"
)

var recordExamples = flag.Bool("record-examples", false, "re-record testdata/examples/*.replay against a scripted local server")

// exampleAnswers scripts the answers the Examples' recordings hold, by a
// substring of the prompt; a list is answered in order.
var exampleAnswers = []struct {
	match   string
	answers []string
}{
	{"Oh great, another outage", []string{`{"label":"negative","confidence":0.55,"reasoning":"sarcasm"}`, `{"label":"negative","confidence":0.92,"reasoning":"sarcastic complaint about an outage"}`}},
	{"Draft a helpful", []string{`{"response":"Go to Settings, then Export, and pick CSV.","escalate":false}`}},
	{"How do I export", []string{`{"label":"neutral","confidence":0.85,"reasoning":"a question"}`}},
	{"I love it", []string{`{"label":"positive","confidence":0.97,"reasoning":"love"}`}},
	{"It broke on day one", []string{`{"label":"negative","confidence":0.93,"reasoning":"broken"}`}},
	{"It is a chair", []string{`{"label":"neutral","confidence":0.9,"reasoning":"a fact"}`}},
	{"capital", []string{`{"answer":"Canberra","confidence":0.8}`, `{"answer":"Sydney","confidence":0.6}`, `{"answer":"Canberra","confidence":0.95}`}},
	{"Write a title", []string{`{"title":"Structured, typed and validated LLM calls for Go programs"}`, `{"title":"Typed LLM calls in Go"}`}},
	{"Argue for", []string{`{"position":"for","claim":"independent deploys"}`, `{"position":"for","claim":"independent deploys still pay off"}`}},
	{"Argue against", []string{`{"position":"against","claim":"operational cost"}`, `{"position":"against","claim":"one deployable is cheaper to run"}`}},
}

// TestRecordExamples re-records the Examples' replay files (with
// -record-examples); otherwise it does nothing: the Examples themselves
// check the recordings.
func TestRecordExamples(t *testing.T) {
	if !*recordExamples {
		t.Skip("use -record-examples to re-record")
	}
	t.Setenv("STRATUM_HOME", t.TempDir())
	var mu sync.Mutex
	used := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &body)
		prompt := fmt.Sprint(body["messages"])
		content := `{}`
		mu.Lock()
		for _, a := range exampleAnswers {
			if strings.Contains(prompt, a.match) {
				content = a.answers[min(used[a.match], len(a.answers)-1)]
				used[a.match]++
				break
			}
		}
		mu.Unlock()
		resp, _ := json.Marshal(map[string]any{"id": "chatcmpl-1", "model": "gpt-4o-mini-2024-07-18",
			"choices": []any{map[string]any{"finish_reason": "stop", "message": map[string]any{"content": content}}},
			"usage":   map[string]any{"prompt_tokens": 120, "completion_tokens": 20}})
		w.Header().Set("Content-Type", "application/json")
		w.Write(resp)
	}))
	defer srv.Close()
	saved := exampleRuntime
	defer func() { exampleRuntime = saved }()
	exampleRuntime = func(name string) *stratum.Runtime {
		mu.Lock()
		clear(used)
		mu.Unlock()
		env := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "recording"}
		rt, err := stratum.New(stratum.Options{Record: "testdata/examples/" + name + ".replay", Model: "openai/gpt-4o-mini",
			Getenv: func(k string) string { return env[k] }})
		if err != nil {
			t.Fatal(err)
		}
		return rt
	}
	Example()
	ExampleNewFlow()
	ExampleAll()
	ExampleSpec_quorum()
	ExampleRefine()
	ExampleDebate()
}
