package stratum

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/review"
)

type cityIn struct {
	City string `json:"city" stratum:"minlen=1"`
}

type weather struct {
	City  string  `json:"city"`
	TempC float64 `json:"temp_c"`
}

type forecast struct {
	Summary string `json:"summary"`
}

// openAIToolCalls is an OpenAI answer with tool calls (id, name, args).
func openAIToolCalls(calls ...[3]string) string {
	var tcs []any
	for _, c := range calls {
		tcs = append(tcs, map[string]any{"id": c[0], "type": "function", "function": map[string]any{"name": c[1], "arguments": c[2]}})
	}
	b, _ := json.Marshal(map[string]any{"id": "c", "model": "gpt-4o-mini",
		"choices": []any{map[string]any{"finish_reason": "tool_calls", "message": map[string]any{"content": nil, "tool_calls": tcs}}},
		"usage":   map[string]any{"prompt_tokens": 100, "completion_tokens": 10}})
	return string(b)
}

func openAIText(content string) string {
	b, _ := json.Marshal(map[string]any{"id": "c", "model": "gpt-4o-mini",
		"choices": []any{map[string]any{"finish_reason": "stop", "message": map[string]any{"content": content}}},
		"usage":   map[string]any{"prompt_tokens": 100, "completion_tokens": 10}})
	return string(b)
}

// toolMessages are the "tool" messages of a request body: id → content.
func toolMessages(body map[string]any) map[string]string {
	out := map[string]string{}
	msgs, _ := body["messages"].([]any)
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		if mm["role"] == "tool" {
			id, _ := mm["tool_call_id"].(string)
			c, _ := mm["content"].(string)
			out[id] = c
		}
	}
	return out
}

// openAIRuntime is a Runtime over a scripted OpenAI-compatible server.
func openAIRuntime(t *testing.T, srv *capture, opts Options) (*Runtime, context.Context) {
	t.Helper()
	t.Setenv("STRATUM_HOME", t.TempDir())
	env := map[string]string{"OPENAI_BASE_URL": srv.srv.URL, "OPENAI_API_KEY": "k", "STRATUM_MODEL": "openai/gpt-4o-mini"}
	opts.Getenv = func(k string) string { return env[k] }
	if opts.Stderr == nil {
		opts.Stderr = io.Discard
	}
	rt, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	return rt, WithRuntime(context.Background(), rt)
}

// Rule 18: two tool calls of one turn run concurrently (each waits for the
// other to start) and their results go back with the right ids; every
// turn is charged and every call traced.
func TestToolCallsRunConcurrently(t *testing.T) {
	srv := newCapture(t, "application/json", func(n int, body map[string]any) string {
		if n == 0 {
			return openAIToolCalls([3]string{"call_a", "weather", `{"city":"Oslo"}`}, [3]string{"call_b", "weather", `{"city":"Rome"}`})
		}
		return openAIText(`{"summary":"cold in Oslo, warm in Rome"}`)
	})
	started := make(chan string, 2)
	both := make(chan struct{})
	var count atomic.Int32
	tool := NewTool("weather", "The weather in a city", func(ctx context.Context, in cityIn) (weather, error) {
		started <- in.City
		if count.Add(1) == 2 {
			close(both)
		}
		select {
		case <-both:
		case <-time.After(5 * time.Second):
			return weather{}, errors.New("the other call never started: the calls ran one after the other")
		}
		temp := map[string]float64{"Oslo": -3, "Rome": 18}[in.City]
		return weather{City: in.City, TempC: temp}, nil
	})
	rt, ctx := openAIRuntime(t, srv, Options{})
	fn := MustInfer("forecast", Spec[cityIn, forecast]{Intent: "Compare the weather", Tools: []Tool{tool}})
	got, err := fn.Call(ctx, cityIn{City: "Oslo and Rome"})
	if err != nil || got.Summary != "cold in Oslo, warm in Rome" {
		t.Fatalf("got %+v, %v", got, err)
	}
	first := srv.body(0)
	tools, _ := first["tools"].([]any)
	if len(tools) != 1 || !strings.Contains(fmt.Sprint(tools[0]), "weather") {
		t.Fatalf("tools sent: %v", first["tools"])
	}
	res := toolMessages(srv.body(1))
	if !strings.Contains(res["call_a"], `"city":"Oslo"`) || !strings.Contains(res["call_a"], "-3") ||
		!strings.Contains(res["call_b"], `"city":"Rome"`) || !strings.Contains(res["call_b"], "18") {
		t.Fatalf("tool results: %v", res)
	}
	tr := rt.Trace()[0]
	if tr.Attempts != 1 || tr.InputTokens != 200 || tr.OutputTokens != 20 || len(tr.ToolCalls) != 2 ||
		tr.ToolCalls[0].ID != "call_a" || tr.ToolCalls[1].Round != 1 || tr.ToolCalls[0].Error != "" {
		t.Fatalf("trace %+v", tr)
	}
}

// Rule 18: a misfit argument goes back to the model as that tool's error
// (the tool not run, no attempt spent); a tool's own error and an unknown
// tool too.
func TestToolMisfitArgumentGoesBack(t *testing.T) {
	srv := newCapture(t, "application/json", func(n int, body map[string]any) string {
		if n == 0 {
			return openAIToolCalls([3]string{"c1", "weather", `{"city":5}`}, [3]string{"c2", "weather", `{"city":"Atlantis"}`},
				[3]string{"c3", "radar", `{}`})
		}
		return openAIText(`{"summary":"unknown"}`)
	})
	var ran atomic.Int32
	tool := NewTool("weather", "The weather", func(ctx context.Context, in cityIn) (weather, error) {
		ran.Add(1)
		return weather{}, fmt.Errorf("no such city: %s", in.City)
	})
	rt, ctx := openAIRuntime(t, srv, Options{})
	fn := MustInfer("forecast", Spec[cityIn, forecast]{Intent: "Weather", Tools: []Tool{tool}})
	if _, err := fn.Call(ctx, cityIn{City: "x"}); err != nil {
		t.Fatal(err)
	}
	res := toolMessages(srv.body(1))
	if !strings.Contains(res["c1"], "the arguments do not fit the tool's schema") || !strings.Contains(res["c1"], "/city") ||
		res["c2"] != "no such city: Atlantis" || !strings.Contains(res["c3"], `there is no tool named "radar"`) || ran.Load() != 1 {
		t.Fatalf("results %v, ran %d", res, ran.Load())
	}
	if tr := rt.Trace()[0]; tr.Attempts != 1 || len(tr.Violations) != 0 || tr.ToolCalls[0].Error == "" {
		t.Fatalf("trace %+v", tr)
	}
}

// Rule 18: a model that still calls tools after MaxToolRounds ends the
// Call with a *ToolLoopError, not retried.
func TestMaxToolRounds(t *testing.T) {
	srv := newCapture(t, "application/json", func(n int, body map[string]any) string {
		return openAIToolCalls([3]string{fmt.Sprintf("c%d", n), "weather", `{"city":"Oslo"}`})
	})
	tool := NewTool("weather", "The weather", func(ctx context.Context, in cityIn) (weather, error) { return weather{City: in.City}, nil })
	_, ctx := openAIRuntime(t, srv, Options{})
	fn := MustInfer("forecast", Spec[cityIn, forecast]{Intent: "Weather", Tools: []Tool{tool}, MaxToolRounds: 2, Retries: 3})
	_, err := fn.Call(ctx, cityIn{City: "x"})
	var tle *ToolLoopError
	if !errors.As(err, &tle) || tle.Rounds != 2 || len(tle.Calls) != 3 || !errors.Is(err, ErrStratum) {
		t.Fatalf("err = %v", err)
	}
	if n := len(srv.bodies); n != 3 {
		t.Fatalf("%d requests", n)
	}
}

// Tool definitions NewInfer refuses.
func TestToolDefinitionErrors(t *testing.T) {
	ok := func(ctx context.Context, in cityIn) (weather, error) { return weather{}, nil }
	for _, c := range []struct {
		tools []Tool
		want  string
	}{
		{[]Tool{NewTool("output", "x", ok)}, `"output" is the library's own`},
		{[]Tool{NewTool("has space", "x", ok)}, "a tool's name"},
		{[]Tool{NewTool("n", "x", func(context.Context, string) (int, error) { return 0, nil })}, "must be a struct or a map"},
		{[]Tool{NewTool("a", "x", ok), NewTool("a", "y", ok)}, `two tools are named "a"`},
		{[]Tool{NewTool("a", "x", ok, RequireApproval("", "human"))}, "needs a question"},
		{[]Tool{NewTool("a", "x", ok, RequireApproval("ok?", "robot"))}, "approver must be"},
		{[]Tool{nil}, "is nil"},
	} {
		_, err := NewInfer("f", Spec[cityIn, forecast]{Intent: "x", Tools: c.tools})
		var ce *CompileError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v", c.want, err)
		}
	}
}

// approvalSpec is a function whose tool needs approval, over srv: the
// model calls the tool once, then answers with what the tool's result
// said (or "refused: <error>").
func approvalServer(t *testing.T) *capture {
	return newCapture(t, "application/json", func(n int, body map[string]any) string {
		if n == 0 {
			return openAIToolCalls([3]string{"call_1", "deploy", `{"city":"prod"}`})
		}
		res := toolMessages(body)["call_1"]
		b, _ := json.Marshal(map[string]string{"summary": res})
		return openAIText(string(b))
	})
}

// Rule 18: a tool with RequireApproval opens a review per call, with the
// tool, its arguments and the conversation as artifacts; a rejection
// (here `stratum gate reject` from another process) goes back to the model
// as the tool's error with the rationale, and an approval with `stratum
// gate approve` runs the tool.
func TestToolApprovalFromStratumGate(t *testing.T) {
	bin := stratumBinary(t)
	sink := newChanSink()
	storeRT, _, _, _ := storeRuntime(t, sink)
	for _, c := range []struct {
		args []string
		want string
		runs int32
	}{
		{[]string{"reject", "--note", "not on a Friday"}, "refused this call: not on a Friday", 0},
		{[]string{"approve", "--option", "1", "--note", "go"}, "deployed prod", 1},
	} {
		srv := approvalServer(t)
		var runs atomic.Int32
		deploy := NewTool("deploy", "Deploy", func(ctx context.Context, in cityIn) (string, error) {
			runs.Add(1)
			return "deployed " + in.City, nil
		}, RequireApproval("Deploy now?", "any"))
		env := map[string]string{"OPENAI_BASE_URL": srv.srv.URL, "OPENAI_API_KEY": "k", "STRATUM_MODEL": "openai/gpt-4o-mini"}
		rt, err := New(Options{Store: storeRT.opts.Store, Sinks: []ReviewSink{sink}, Getenv: func(k string) string { return env[k] }, Stderr: io.Discard})
		if err != nil {
			t.Fatal(err)
		}
		ctx := WithRuntime(context.Background(), rt)
		fn := MustInfer("release", Spec[cityIn, forecast]{Intent: "Release", Tools: []Tool{deploy}})
		type out struct {
			f   forecast
			err error
		}
		ch := make(chan out, 1)
		go func() {
			f, err := NewFlow("release", Budget{}, fn.Call).Run(ctx, cityIn{City: "prod"})
			ch <- out{f, err}
		}()
		p := sink.next(t)
		if p.Question != "Deploy now?" || p.Trigger != "tool_call" || p.Artifacts["tool"] != "deploy" ||
			!strings.Contains(fmt.Sprint(p.Artifacts["arguments"]), "prod") || !strings.Contains(fmt.Sprint(p.Artifacts["conversation"]), "calls deploy") {
			t.Fatalf("review %+v", p)
		}
		flowID, step, _ := splitReviewID(p.ReviewID)
		cmd := exec.Command(bin, append([]string{"gate", c.args[0], flowID, step}, c.args[1:]...)...)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("stratum gate %s: %v %s", c.args[0], err, b)
		}
		var o out
		select {
		case o = <-ch:
		case <-time.After(20 * time.Second):
			t.Fatal("the Call did not end")
		}
		if o.err != nil || !strings.Contains(o.f.Summary, c.want) || runs.Load() != c.runs {
			t.Fatalf("%s: %+v, %v, %d runs", c.args[0], o.f, o.err, runs.Load())
		}
		rt.Close(context.Background())
	}
}

// Rule 18: approver "human" follows the human-gate rules: neither the
// program (Runtime.Resolve) nor MCP may approve the tool call; a person's
// channel does.
func TestToolHumanApprovalRefusedToPrograms(t *testing.T) {
	sink := newChanSink()
	storeRT, _, svc, _ := storeRuntime(t, sink)
	srv := approvalServer(t)
	deploy := NewTool("deploy", "Deploy", func(ctx context.Context, in cityIn) (string, error) { return "deployed " + in.City, nil },
		RequireApproval("Deploy now?", "human"))
	env := map[string]string{"OPENAI_BASE_URL": srv.srv.URL, "OPENAI_API_KEY": "k", "STRATUM_MODEL": "openai/gpt-4o-mini"}
	rt, err := New(Options{Store: storeRT.opts.Store, Sinks: []ReviewSink{sink}, Getenv: func(k string) string { return env[k] }, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	ctx := WithRuntime(context.Background(), rt)
	fn := MustInfer("release", Spec[cityIn, forecast]{Intent: "Release", Tools: []Tool{deploy}})
	ch := make(chan error, 1)
	go func() {
		_, err := NewFlow("release", Budget{}, fn.Call).Run(ctx, cityIn{City: "prod"})
		ch <- err
	}()
	p := sink.next(t)
	if err := rt.Resolve(ctx, Resolution{ReviewID: p.ReviewID, Value: json.RawMessage(`"run deploy"`), Reviewer: "bot", Rationale: "sure"}); !errors.Is(err, review.ErrNotAllowed) {
		t.Fatalf("Resolve = %v", err)
	}
	fid, step, _ := splitReviewID(p.ReviewID)
	_, err = review.NewService[engine.Outcome](svc).Decide(ctx, review.Decision{FlowID: fid, StepID: step, Option: 1,
		Outcome: review.Approve, Reviewer: "agent", ResolvedBy: review.Agent, Channel: review.ChannelMCP})
	if err == nil || !strings.Contains(err.Error(), "human") {
		t.Fatalf("an MCP approval = %v", err)
	}
	select {
	case err := <-ch:
		t.Fatalf("the Call ended without a person: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	if _, err := review.NewService[engine.Outcome](svc).Decide(ctx, review.Decision{FlowID: fid, StepID: step, Option: 1,
		Outcome: review.Approve, Reviewer: "ann", ResolvedBy: review.Human, Channel: review.ChannelTUI}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ch:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the Call did not end")
	}
}
