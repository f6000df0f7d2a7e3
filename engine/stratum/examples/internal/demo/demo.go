// Package demo is what the example programs share: the Runtime they run
// on (a recording embedded in each program, or a real provider with
// --live) and, for their tests, a scripted server to re-record them.
package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/stratum-go/stratum/engine/stratum"
)

// Model is the model the recordings were made with.
const Model = "openai/gpt-4o-mini"

// Runtime returns the Runtime of an example: with live, models from the
// environment exactly as `stratum run` reads them (STRATUM_MODEL,
// <PROVIDER>_API_KEY, <PROVIDER>_BASE_URL); else answers from recording,
// with no network and no key. The returned function closes it.
func Runtime(recording []byte, live bool) (*stratum.Runtime, func(), error) {
	return RuntimeWith(recording, live, stratum.Options{})
}

// RuntimeWith is Runtime over base options (a Store, Sinks; its Replay,
// Model and Getenv are set here).
func RuntimeWith(recording []byte, live bool, base stratum.Options) (*stratum.Runtime, func(), error) {
	if live {
		rt, err := stratum.New(base)
		if err != nil {
			return nil, nil, err
		}
		return rt, func() { rt.Close(context.Background()) }, nil
	}
	f, err := os.CreateTemp("", "stratum-example-*.replay")
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if _, err := f.Write(recording); err != nil {
		os.Remove(f.Name())
		return nil, nil, err
	}
	base.Replay, base.Model, base.Getenv = f.Name(), Model, func(string) string { return "" }
	rt, err := stratum.New(base)
	if err != nil {
		os.Remove(f.Name())
		return nil, nil, err
	}
	return rt, func() { rt.Close(context.Background()); os.Remove(f.Name()) }, nil
}

// Answer scripts a recording: prompts containing Match are answered with
// Answers in order (the last one repeats). With Calls, the model first
// calls tools: the conversation's turn i (i tool turns so far) is
// answered with the tool calls Calls[i], and once they are used up with
// Answers. A streamed request (Fn.Stream) is answered over server-sent
// events, the answer in pieces of a few characters.
type Answer struct {
	Match   string
	Answers []string
	Calls   [][]ToolCall
}

// ToolCall is a scripted tool call: the tool's name and its arguments
// (JSON).
type ToolCall struct {
	Name, Args string
}

// Recorder returns a Runtime that records every exchange to path, over a
// local OpenAI-compatible server answering by script (the first Answer
// whose Match the prompt contains), and a function that closes both.
func Recorder(path string, script []Answer) (*stratum.Runtime, func(), error) {
	return RecorderWith(path, script, stratum.Options{})
}

// RecorderWith is Recorder over base options (Sinks …; its Record, Model
// and Getenv are set here).
func RecorderWith(path string, script []Answer, base stratum.Options) (*stratum.Runtime, func(), error) {
	var mu sync.Mutex
	used := map[int]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &body)
		prompt := fmt.Sprint(body["messages"])
		turn := toolTurns(body)
		content := `{}`
		var calls []ToolCall
		mu.Lock()
		for i, a := range script {
			if strings.Contains(prompt, a.Match) {
				if turn < len(a.Calls) {
					calls = a.Calls[turn]
					break
				}
				content = a.Answers[min(used[i], len(a.Answers)-1)]
				used[i]++
				break
			}
		}
		mu.Unlock()
		if body["stream"] == true {
			writeStream(w, content)
			return
		}
		msg := map[string]any{"content": content}
		finish := "stop"
		if calls != nil {
			msg, finish = map[string]any{"content": nil, "tool_calls": toolCalls(turn, calls)}, "tool_calls"
		}
		resp, _ := json.Marshal(map[string]any{"id": "chatcmpl-1", "model": "gpt-4o-mini-2024-07-18",
			"choices": []any{map[string]any{"finish_reason": finish, "message": msg}},
			"usage":   map[string]any{"prompt_tokens": 150, "completion_tokens": 25}})
		w.Header().Set("Content-Type", "application/json")
		w.Write(resp)
	}))
	env := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "recording"}
	base.Record, base.Model, base.Getenv = path, Model, func(k string) string { return env[k] }
	rt, err := stratum.New(base)
	if err != nil {
		srv.Close()
		return nil, nil, err
	}
	return rt, func() { rt.Close(context.Background()); srv.Close() }, nil
}

// toolTurns counts the tool turns of a request's conversation: the
// assistant messages (each made tool calls).
func toolTurns(body map[string]any) int {
	msgs, _ := body["messages"].([]any)
	n := 0
	for _, m := range msgs {
		if mm, _ := m.(map[string]any); mm["role"] == "assistant" {
			n++
		}
	}
	return n
}

// toolCalls is the OpenAI form of a turn's scripted tool calls.
func toolCalls(turn int, calls []ToolCall) []any {
	out := make([]any, len(calls))
	for i, c := range calls {
		out[i] = map[string]any{"id": fmt.Sprintf("call_%d_%d", turn+1, i+1), "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": c.Args}}
	}
	return out
}

// writeStream answers a streamed request: the content in pieces of 8
// bytes as OpenAI's chunks, then the finish, the usage and [DONE].
func writeStream(w http.ResponseWriter, content string) {
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	for len(content) > 0 {
		n := min(8, len(content))
		for n < len(content) && !utf8.RuneStart(content[n]) {
			n++
		}
		send(map[string]any{"id": "chatcmpl-1", "model": "gpt-4o-mini-2024-07-18",
			"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": content[:n]}}}})
		content = content[n:]
	}
	send(map[string]any{"id": "chatcmpl-1", "choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"}}})
	send(map[string]any{"id": "chatcmpl-1", "choices": []any{}, "usage": map[string]any{"prompt_tokens": 150, "completion_tokens": 25}})
	fmt.Fprint(w, "data: [DONE]\n\n")
}
