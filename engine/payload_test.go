package engine

import (
	"bufio"
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
)

// detailFlow drives a flow through a failed attempt, a success, a traced
// call, a gate with a deadline and its decision, so that its events carry
// every kind of data the front ends show.
const detailFlow = `version: "0.2"
contracts:
  Out:
    n: {type: integer}
functions:
  review:
    mode: gate
    timeout: 60
flows:
  main:
    input: {}
    steps:
      - id: s1
        intent: "count"
        output_contract: Out
        ensure: ["result.n > 0"]
        retries: 3
      - id: gate
        function: review
        depends_on: [s1]
        on_approve: ~
        on_revise: s1
        on_kill: ~
`

// TestPayloadRoundTrip checks that the payloads the transitions write come
// back the same from their JSON form (what an event read back from the log
// holds), and hold what the transitions wrote.
func TestPayloadRoundTrip(t *testing.T) {
	f, _ := plan(t, detailFlow, "main", nil)
	f.stepDone("s1", map[string]any{"n": 0})
	cost := 0.25
	f.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return recordCall(st, env, CallRecord{StepID: "s1", Attempt: 2, DurationMS: 1500, Tokens: 42, CostUSD: &cost,
			Trace:    &state.TraceRecord{Function: "s1", Model: "openai/gpt-4o-mini", Output: map[string]any{"n": 3.0}},
			Executor: "infer"})
	})
	f.stepDone("s1", map[string]any{"n": 3})
	f.resolve("gate", review.Revise)

	byType := map[EventType]Payload{}
	for _, ev := range f.events {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		var stored Event
		if err := json.Unmarshal(b, &stored); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(stored.Data, ev.Data) {
			t.Errorf("%s: in process %+v\nstored %+v (%s)", ev.Type, ev.Data, stored.Data, b)
		}
		if _, seen := byType[ev.Type]; !seen {
			byType[ev.Type] = ev.Data
		}
	}

	failed, _ := byType[EventStepFailed].(StepFailed)
	if failed.Attempt != 1 || failed.Status != "ensure_failed" || len(failed.Violations) != 1 || failed.Exhausted {
		t.Errorf("step_failed data: %+v", failed)
	}
	if done, _ := byType[EventStepDone].(StepDone); done.Attempts != 2 {
		t.Errorf("step_done data: %+v", done)
	}
	call, _ := byType[EventTrace].(Trace)
	if call.Attempt != 2 || call.DurationMS != 1500 || call.Tokens != 42 || call.CostUSD == nil || *call.CostUSD != 0.25 ||
		call.Executor != "infer" || call.Trace == nil || call.Trace.Model != "openai/gpt-4o-mini" || call.Trace.Function != "s1" {
		t.Errorf("trace data: %+v (trace %+v)", call, call.Trace)
	}
	opened, _ := byType[EventGateOpened].(GateOpened)
	if opened.Round != 0 || opened.Approver != "any" || opened.Deadline == nil || !opened.Deadline.Equal(t0.Add(60e9)) {
		t.Errorf("gate_opened data: %+v", opened)
	}
	res, _ := byType[EventGateResolved].(GateResolved)
	if res.Outcome != "revise" || res.Reviewer != "ann" || res.Channel != "tui" || res.Rationale != "because" || res.ResolvedBy != "human" {
		t.Errorf("gate_resolved data: %+v", res)
	}
	if created, _ := byType[EventFlowCreated].(FlowCreated); created.FlowName != "main" {
		t.Errorf("flow_created data: %+v", created)
	}
}

// storedEventsDir holds every event shape as the map-based build stored
// them, and that build's typed reading of each (README.md there).
const storedEventsDir = "../testdata/events/"

func readLines(t *testing.T, name string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(storedEventsDir + name)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, bytes.Clone(sc.Bytes()))
	}
	return out
}

// TestStoredEventsDecodeAndReencode: every event the map-based build
// stored decodes to the values that build's typed reading gave, and
// encodes to the bytes this build writes for it (current.jsonl: the very
// bytes stored, but where the format changed on purpose since), which
// encode to themselves.
func TestStoredEventsDecodeAndReencode(t *testing.T) {
	lines, readings, current := readLines(t, "stored-v1.jsonl"), readLines(t, "stored-v1.readings.jsonl"), readLines(t, "current.jsonl")
	if len(lines) == 0 || len(lines) != len(readings) || len(lines) != len(current) {
		t.Fatalf("%d stored events, %d readings, %d current", len(lines), len(readings), len(current))
	}
	kinds := map[EventType]bool{}
	for i, line := range lines {
		var ev Event
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		kinds[ev.Type] = true
		for _, b := range [][]byte{line, current[i]} {
			var ev Event
			if err := json.Unmarshal(b, &ev); err != nil {
				t.Fatalf("line %d: %v", i+1, err)
			}
			got, err := json.Marshal(ev)
			if err != nil {
				t.Fatalf("line %d: %v", i+1, err)
			}
			if !bytes.Equal(got, current[i]) {
				t.Errorf("line %d re-encodes differently:\nread %s\nwant %s\nnow  %s", i+1, b, current[i], got)
			}
		}
		var reading struct {
			Detail map[string]json.RawMessage
			Task   map[string]json.RawMessage
		}
		if err := json.Unmarshal(readings[i], &reading); err != nil {
			t.Fatal(err)
		}
		for name, want := range reading.Detail {
			if name == "Call" {
				var call any
				if tr, _ := ev.Data.(Trace); tr.Trace != nil {
					call = map[string]any{"function": tr.Trace.Function, "model": tr.Trace.Model, "output": tr.Trace.Output}
				}
				sameJSON(t, i+1, name, want, call)
				continue
			}
			sameField(t, i+1, ev.Data, name, want)
		}
		for name, want := range reading.Task {
			sameField(t, i+1, ev.Data, name, want)
		}
	}
	for _, k := range []EventType{EventFlowCreated, EventStepDispatched, EventStepDone, EventStepFailed, EventStepSkipped,
		EventGateOpened, EventGateResolved, EventCheckpoint, EventIterationReport, EventFlowFinished, EventTrace, EventParallelTask} {
		if !kinds[k] {
			t.Errorf("no stored %s event", k)
		}
	}
}

// sameField compares the payload's field of that Go name (the map-based
// build's EventDetail and TaskEventDetail used the same names) with the
// map-based build's reading; a payload without that field (its kind never
// carries the key) must have read zero.
func sameField(t *testing.T, line int, p Payload, name string, want json.RawMessage) {
	t.Helper()
	var v reflect.Value
	if p != nil {
		v = reflect.ValueOf(p).FieldByName(name)
	}
	if v.IsValid() {
		sameJSON(t, line, name, want, v.Interface())
		return
	}
	var w any
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if w != nil && !reflect.ValueOf(w).IsZero() && !(reflect.ValueOf(w).Kind() == reflect.Slice && reflect.ValueOf(w).Len() == 0) {
		t.Errorf("line %d: %T has no field %s, the map-based build read %s", line, p, name, want)
	}
}

func sameJSON(t *testing.T, line int, name string, want json.RawMessage, got any) {
	t.Helper()
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var w, g any
	if json.Unmarshal(want, &w) != nil || json.Unmarshal(b, &g) != nil {
		t.Fatalf("line %d %s: not JSON: %s / %s", line, name, want, b)
	}
	// The map-based reading said nothing of a list's absence: nil and
	// empty read the same there.
	if l, ok := w.([]any); ok && len(l) == 0 && g == nil {
		return
	}
	if !reflect.DeepEqual(w, g) {
		t.Errorf("line %d: %s = %s, the map-based build read %s", line, name, b, want)
	}
}

// TestPayloadsEncodeTheirTags: every payload writes exactly its json tags
// as keys, in the order its fields are declared, which is key order; each
// key is written when its field is set (the payload is then not zero) and
// its value as encoding/json writes it; a zero payload writes nothing.
func TestPayloadsEncodeTheirTags(t *testing.T) {
	for kind, decode := range payloadDecoders {
		zero, err := decode([]byte("{}"))
		if err != nil {
			t.Fatal(err)
		}
		if zero.Kind() != kind {
			t.Errorf("the decoder of %s makes a %T of kind %s", kind, zero, zero.Kind())
		}
		typ := reflect.TypeOf(zero)
		full := reflect.New(typ).Elem()
		var tags []string
		for i := range typ.NumField() {
			tag, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			if i > 0 && tags[i-1] >= tag {
				t.Errorf("%s: key %q is out of order", typ.Name(), tag)
			}
			tags = append(tags, tag)
			full.Field(i).Set(sample(t, typ.Field(i).Type))

			one := reflect.New(typ).Elem()
			one.Field(i).Set(sample(t, typ.Field(i).Type))
			fields, err := (Event{Type: kind, Data: one.Interface().(Payload)}).DataFields()
			if err != nil || !hasKey(fields, tag) {
				t.Errorf("%s: %s alone set: keys %v (%v)", typ.Name(), tag, fields, err)
			}
		}
		if typ.NumField() > 20 {
			t.Errorf("%s has %d fields", typ.Name(), typ.NumField())
		}
		if f, err := (Event{Type: kind, Data: zero}).DataFields(); f != nil || err != nil {
			t.Errorf("%s: zero payload lists %v (%v)", typ.Name(), f, err)
		}
		fields, err := (Event{Type: kind, Data: full.Interface().(Payload)}).DataFields()
		if err != nil {
			t.Fatal(err)
		}
		if len(fields) != len(tags) {
			t.Fatalf("%s: writes %v, its tags are %v", typ.Name(), fields, tags)
		}
		for i, f := range fields {
			want, _ := json.Marshal(full.Field(i).Interface())
			if f.Key != tags[i] || !bytes.Equal(f.JSON, want) {
				t.Errorf("%s: key %d written %s %s, encoding/json writes %s %s", typ.Name(), i, f.Key, f.JSON, tags[i], want)
			}
		}
	}
}

func hasKey(fields []DataField, key string) bool {
	for _, f := range fields {
		if f.Key == key {
			return true
		}
	}
	return false
}

// TestEveryPayloadIsDecoded: every type of package engine with a Kind
// method (a Payload) is decoded by its kind, so an event kind added
// without its decoder fails here, not when its events are read back.
func TestEveryPayloadIsDecoded(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]bool{}
	for _, f := range pkgs["engine"].Files {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || fn.Name.Name != "Kind" {
				continue
			}
			if id, ok := fn.Recv.List[0].Type.(*ast.Ident); ok && id.Name != "unknownPayload" {
				declared[id.Name] = true
			}
		}
	}
	decoded := map[string]bool{}
	for _, decode := range payloadDecoders {
		p, err := decode([]byte("{}"))
		if err != nil {
			t.Fatal(err)
		}
		decoded[reflect.TypeOf(p).Name()] = true
	}
	for name := range declared {
		if !decoded[name] {
			t.Errorf("payload %s has no decoder in payloadDecoders", name)
		}
	}
	if len(declared) != len(decoded) {
		t.Errorf("%d payload types declared, %d decoded", len(declared), len(decoded))
	}
}

// sample is a non-zero value of a field's type, with characters
// encoding/json escapes.
func sample(t *testing.T, typ reflect.Type) reflect.Value {
	switch typ {
	case reflect.TypeFor[string]():
		return reflect.ValueOf("a<b>&\"\\\n\u2028\x01é\xff")
	case reflect.TypeFor[int](), reflect.TypeFor[int64]():
		return reflect.ValueOf(-12345).Convert(typ)
	case reflect.TypeFor[bool]():
		return reflect.ValueOf(true)
	case reflect.TypeFor[*float64]():
		f := 1.5e-7
		return reflect.ValueOf(&f)
	case reflect.TypeFor[*int]():
		n := 7
		return reflect.ValueOf(&n)
	case reflect.TypeFor[*time.Time]():
		d := time.Date(2026, 11, 26, 22, 34, 3, 158426940, time.UTC)
		return reflect.ValueOf(&d)
	case reflect.TypeFor[[]string]():
		return reflect.ValueOf([]string{})
	case reflect.TypeFor[json.RawMessage]():
		return reflect.ValueOf(json.RawMessage(`{"b": [1, "<"], "a": null}`))
	case reflect.TypeFor[*state.JudgeVerdict]():
		return reflect.ValueOf(&state.JudgeVerdict{Turn: 2, Predicates: []state.PredicateVerdict{{ID: "p<", Verdict: "met",
			Evidence: []state.JudgeEvidence{{Source: "artifacts/a.txt:1", Quote: "é&", Tier: "T2"}}}}})
	case reflect.TypeFor[*state.TraceRecord]():
		return reflect.ValueOf(&state.TraceRecord{Function: "f<", Output: map[string]any{"b": 1, "a": "<"}})
	}
	t.Fatalf("no sample of %s", typ)
	return reflect.Value{}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "a<b>&c", "\"\\\b\f\n\r\t\x00\x1f\x7f", "\u2028\u2029é", "\xff\xfe", "\xe2\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("%q: %s, encoding/json %s", s, got, want)
		}
	})
}

func FuzzAppendFloat(f *testing.F) {
	for _, x := range []float64{0, -0.0, 1, 0.1, 1e-6, 9.99e-7, 1e20, 1e21, 123456789.125, -4.2e-9, math.MaxFloat64, math.SmallestNonzeroFloat64} {
		f.Add(math.Float64bits(x))
	}
	f.Fuzz(func(t *testing.T, bits uint64) {
		x := math.Float64frombits(bits)
		got, err := appendFloat(nil, &x)
		want, werr := json.Marshal(x)
		if (err != nil) != (werr != nil) || !bytes.Equal(got, want) {
			t.Fatalf("%v: %s (%v), encoding/json %s (%v)", x, got, err, want, werr)
		}
	})
}

// TestPayloadBadInput: no data, no "data"; data of the wrong type is an
// error, not a panic; a number that JSON cannot hold is an error; a
// payload of another kind than the event's is not written.
func TestPayloadBadInput(t *testing.T) {
	b, err := json.Marshal(Event{Seq: 3, Time: t0, FlowID: "f", Type: EventStepDone})
	if err != nil || string(b) != `{"seq":3,"time":"2026-03-04T10:00:00Z","flow_id":"f","type":"step_done"}` {
		t.Errorf("bare event: %s, %v", b, err)
	}
	var ev Event
	for _, bad := range []string{`{"type":"step_failed","data":{"attempt":"two"}}`, `{"type":"step_failed","data":{"violations":3}}`,
		`{"type":"gate_opened","data":{"deadline":"soon"}}`, `{"data":[]}`, `{"type":"step_done","data":"x"}`, `{"type":"novel","data":3}`} {
		if err := json.Unmarshal([]byte(bad), &ev); err == nil {
			t.Errorf("%s decoded", bad)
		}
	}
	nan := math.NaN()
	if _, err := json.Marshal(Event{Type: EventTrace, Data: Trace{CostUSD: &nan}}); err == nil {
		t.Error("NaN cost encoded")
	}
	if _, err := (Event{Type: EventIterationReport, Data: IterationReport{Score: &nan}}).DataFields(); err == nil {
		t.Error("NaN score listed")
	}
	if b, err := json.Marshal(Event{Type: EventStepDone, Data: StepFailed{Attempt: 1}}); err == nil {
		t.Errorf("a step_failed payload on a step_done event encoded: %s", b)
	}
}

// TestUnknownKindKept: an event kind this build does not know (a newer
// build's) keeps its data as read, is written back the same and listed.
func TestUnknownKindKept(t *testing.T) {
	line := `{"seq":9,"time":"2026-03-04T10:00:00Z","flow_id":"f","type":"novel_kind","step_id":"s","data":{"score":0.5,"verdict":"pass"}}`
	var ev Event
	if err := json.Unmarshal([]byte(line), &ev); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(ev)
	if err != nil || string(b) != line {
		t.Errorf("re-encoded %s (%v)", b, err)
	}
	fields, err := ev.DataFields()
	if err != nil || len(fields) != 2 || fields[0].Key != "score" || string(fields[1].JSON) != `"pass"` {
		t.Errorf("fields %v (%v)", fields, err)
	}
}

// TestPolicyEventsJSON: the gate events of a policy's approval and of a
// policy that could not approve a human's gate, straight from the
// transitions, write the keys the map-based build wrote, and round on the
// approval since afaf7ca (no test stored one, so testdata/events holds
// hand-built ones; these pin the real ones).
func TestPolicyEventsJSON(t *testing.T) {
	tests := []struct{ approver, want string }{
		{"any", `{"channel":"policy","outcome":"approve","policy":"flag","rationale":"policy: flag — auto-approved","round":0}`},
		{"human", `{"approver":"human","policy":"flag","policy_failed":"approver: human","round":0}`},
	}
	for _, tt := range tests {
		src := strings.NewReplacer("APPROVER", tt.approver, "POLICY", "policy: flag\n        policy_fallback: gate").Replace(policyFallbackSpec)
		f, _ := plan(t, src, "main", nil)
		f.stepDone("work", map[string]any{"ok": true})
		var got string
		for _, ev := range f.events {
			if ev.StepID == "gate" && (ev.Type == EventGateResolved || ev.Type == EventGateOpened) {
				b, err := json.Marshal(ev)
				if err != nil {
					t.Fatal(err)
				}
				_, data, _ := bytes.Cut(b, []byte(`"data":`))
				got = string(bytes.TrimSuffix(data, []byte("}")))
			}
		}
		if got != tt.want {
			t.Errorf("approver %s: data %s, want %s", tt.approver, got, tt.want)
		}
	}
}
