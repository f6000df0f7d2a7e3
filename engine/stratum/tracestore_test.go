package stratum

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/state"
)

// storedCall is the one trace entry of a stored flow: as the flow state
// keeps it, as its trace event carries it, and the audit's calls.
func storedCall(t *testing.T, st engine.Store, id string) (state.TraceRecord, *engine.AuditReport, []byte) {
	t.Helper()
	ctx := context.Background()
	svc := &engine.Service{Store: st}
	fs, err := svc.Query().Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs.Trace) != 1 {
		t.Fatalf("%d trace entries, want 1", len(fs.Trace))
	}
	var tr state.TraceRecord
	if err := json.Unmarshal(fs.Trace[0], &tr); err != nil {
		t.Fatal(err)
	}
	evs, err := svc.Query().FlowEvents(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var evTrace *state.TraceRecord
	for _, e := range evs {
		if d, ok := e.Data.(engine.Trace); ok {
			evTrace = d.Trace
		}
	}
	if evTrace == nil {
		t.Fatal("no trace event")
	}
	a, b := json.Marshal(tr)
	c, d := json.Marshal(evTrace)
	if b != nil || d != nil || string(a) != string(c) {
		t.Fatalf("the event's trace record differs from the state's:\n%s\n%s", c, a)
	}
	audit, err := svc.Audit(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	wire, err := engine.WireJSON(audit, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tr, audit, wire
}

// Item 7 of the second library: a stored Call's trace entry keeps its
// inputs (cut to a bound, and saying so), its failed attempts with their
// violations, its tool calls with arguments and results; the event
// carries the same and the audit lists it under calls. The program's own
// trace keeps the inputs whole.
func TestStoredCallKeepsInputsRetriesAndToolCalls(t *testing.T) {
	t.Setenv("STRATUM_HOME", t.TempDir())
	t.Chdir(t.TempDir())
	st := openShared(t)
	srv := newCapture(t, "application/json", func(n int, body map[string]any) string {
		switch n {
		case 0:
			return openAIToolCalls([3]string{"call_a", "weather", `{"city":"Oslo"}`})
		case 1:
			return openAIText(`the weather is cold`)
		}
		return openAIText(`{"summary":"cold in Oslo"}`)
	})
	tool := NewTool("weather", "The weather in a city", func(ctx context.Context, in cityIn) (weather, error) {
		return weather{City: in.City, TempC: -3}, nil
	})
	rt, ctx := openAIRuntime(t, srv, Options{Store: st})
	fn := MustInfer("forecast", Spec[cityIn, forecast]{Intent: "Say the weather", Tools: []Tool{tool}})
	long := "Oslo " + strings.Repeat("é", 20000)
	flow := NewFlow("weather", Budget{}, func(ctx context.Context, in cityIn) (string, error) {
		_, err := fn.Call(ctx, in)
		return FlowID(ctx), err
	})
	id, err := flow.Run(ctx, cityIn{City: long})
	if err != nil {
		t.Fatal(err)
	}
	if got := rt.Trace()[0].Inputs.(map[string]any)["city"]; got != long {
		t.Errorf("the program's trace lost its inputs: %d bytes", len(got.(string)))
	}
	tr, audit, wire := storedCall(t, st, id)
	city, _ := tr.Inputs["city"].(string)
	in, _ := json.Marshal(tr.Inputs)
	if !tr.InputsTruncated || !strings.HasPrefix(city, "Oslo éé") || !strings.Contains(city, "…(+") || len(in) > storedInputsMax {
		t.Errorf("inputs: truncated %v, %d bytes, city %.40q…", tr.InputsTruncated, len(in), city)
	}
	if len(tr.Retries) != 1 || tr.Retries[0].Attempt != 1 || len(tr.Retries[0].Violations) == 0 || tr.Attempts != 2 {
		t.Errorf("retries %+v (attempts %d), want attempt 1 with its violations", tr.Retries, tr.Attempts)
	}
	if len(tr.ToolCalls) != 1 {
		t.Fatalf("tool calls %+v", tr.ToolCalls)
	}
	tc := tr.ToolCalls[0]
	if tc.Attempt != 1 || tc.Round != 1 || tc.ID != "call_a" || tc.Name != "weather" || string(tc.Args) != `{"city":"Oslo"}` ||
		!strings.Contains(string(tc.Result), `-3`) || tc.Error != "" || tc.Truncated {
		t.Errorf("tool call %+v (args %s, result %s)", tc, tc.Args, tc.Result)
	}
	if tr.StepID != "forecast#1" || tr.Streamed {
		t.Errorf("step id %q, streamed %v", tr.StepID, tr.Streamed)
	}
	if len(audit.Calls) != 1 || !strings.Contains(string(wire), `"calls":[{`) || !strings.Contains(string(wire), `"retries":[{"attempt":1,`) ||
		!strings.Contains(string(wire), `"tool_calls":[{"attempt":1,"round":1,"id":"call_a","name":"weather"`) {
		t.Errorf("audit: %d calls\n%s", len(audit.Calls), wire)
	}
}

// Item 7: a streamed Call in a stored flow is marked streamed, with the
// failed attempt's violation (a retry mid-stream).
func TestStoredStreamedCallIsMarked(t *testing.T) {
	t.Setenv("STRATUM_HOME", t.TempDir())
	t.Chdir(t.TempDir())
	st := openShared(t)
	srv := newSSE(t, func(n int) []string {
		if n == 0 {
			return openAIEvents(`{"label":"positive","confidence":0.3}`, 6)
		}
		return openAIEvents(`{"label":"positive","confidence":0.9}`, 6)
	}, false)
	env := map[string]string{"OPENAI_BASE_URL": srv.srv.URL, "OPENAI_API_KEY": "k", "STRATUM_MODEL": "openai/gpt-4o-mini"}
	rt, err := New(Options{Store: st, Getenv: func(k string) string { return env[k] }, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	fn := classify(t, Spec[textIn, sentiment]{Ensure: []Check[sentiment]{
		Ensure("confidence above 0.5", func(s sentiment) bool { return s.Confidence > 0.5 })}})
	flow := NewFlow("streamed", Budget{}, func(ctx context.Context, in textIn) (string, error) {
		_, err := collect(fn.Stream(ctx, in))
		return FlowID(ctx), err
	})
	id, err := flow.Run(WithRuntime(context.Background(), rt), textIn{Text: "nice"})
	if err != nil {
		t.Fatal(err)
	}
	tr, _, _ := storedCall(t, st, id)
	if !tr.Streamed || tr.InputsTruncated || tr.Inputs["text"] != "nice" || len(tr.Retries) != 1 ||
		tr.Retries[0].Attempt != 1 || tr.Retries[0].Violations[0] != "confidence above 0.5" {
		t.Errorf("trace %+v", tr)
	}
}

func TestBoundValue(t *testing.T) {
	many := make([]any, 3000)
	keys := map[string]any{}
	for i := range many {
		many[i] = "item"
		keys[strings.Repeat("k", 1+i%40)+string(rune('a'+i%26))+string(rune('a'+i/26%26))] = i
	}
	deep := any("bottom")
	for range 50 {
		deep = []any{deep, strings.Repeat("d", 600)}
	}
	for _, c := range []struct {
		name    string
		v       any
		max     int
		cut     bool
		has     string // in the bounded JSON
		hasNot  string
		maxSize int
	}{
		{"small value kept", map[string]any{"a": "b"}, 100, false, `{"a":"b"}`, "…", 100},
		{"long string cut on a rune", map[string]any{"s": strings.Repeat("é", 3000)}, 2000, true, "…(+", "\\ufffd", 2000},
		{"long list cut", map[string]any{"l": many}, 4000, true, `…(+`, "", 4000},
		{"many keys cut", keys, 4000, true, `more keys`, "", 4000},
		{"deep nesting cut", deep, 4000, true, `"…"`, "bottom", 4000},
		{"nothing fits", map[string]any{"s": strings.Repeat("x", 5000)}, 10, true, "bytes of JSON not kept", "", 64},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, cut := boundValue(c.v, c.max)
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if cut != c.cut || len(b) > c.maxSize || !strings.Contains(string(b), c.has) || (c.hasNot != "" && strings.Contains(string(b), c.hasNot)) {
				t.Errorf("cut %v, %d bytes: %.300s", cut, len(b), b)
			}
		})
	}
	for _, c := range []struct {
		raw  string
		want string
		cut  bool
	}{
		{`{"city":"Oslo"}`, `{"city":"Oslo"}`, false},
		{`{"city":`, `"{\"city\":"`, false}, // a model's malformed arguments, kept as text
		{``, ``, false},
		{`"` + strings.Repeat("x", 100) + `"`, `"` + strings.Repeat("x", 64) + `…(+36 bytes)"`, true},
	} {
		got, cut := boundRaw(json.RawMessage(c.raw), 80)
		if string(got) != c.want || cut != c.cut {
			t.Errorf("boundRaw(%.20q) = %s, %v; want %s, %v", c.raw, got, cut, c.want, c.cut)
		}
	}
}

// Item 7: a stored Call that failed says why (error) with each failed
// attempt numbered, so the audit tells why it was retried and why it
// gave up.
func TestStoredFailedCallSaysWhy(t *testing.T) {
	t.Setenv("STRATUM_HOME", t.TempDir())
	t.Chdir(t.TempDir())
	st := openShared(t)
	srv := newCapture(t, "application/json", func(int, map[string]any) string { return openAIText(`no JSON here`) })
	_, ctx := openAIRuntime(t, srv, Options{Store: st})
	fn := MustInfer("forecast", Spec[cityIn, forecast]{Intent: "Say the weather", Retries: 1})
	var id string
	flow := NewFlow("weather", Budget{}, func(ctx context.Context, in cityIn) (forecast, error) {
		id = FlowID(ctx)
		return fn.Call(ctx, in)
	})
	if _, err := flow.Run(ctx, cityIn{City: "Oslo"}); err == nil {
		t.Fatal("the call did not fail")
	}
	tr, _, wire := storedCall(t, st, id)
	if tr.Error == "" || len(tr.Retries) != 2 || tr.Retries[0].Attempt != 1 || tr.Retries[1].Attempt != 2 {
		t.Errorf("error %q, retries %+v", tr.Error, tr.Retries)
	}
	if !strings.Contains(string(wire), `"error":"stratum: forecast`) {
		t.Errorf("the audit does not say why the call failed: %s", wire)
	}
}
