package engine

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/specs"
	"github.com/stratum-go/stratum/specs/exprlang"
)

var t0 = time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)

// mustParse parses an inline spec or fails the test.
func mustParse(t *testing.T, src string) *specs.Spec {
	t.Helper()
	sp, ds := specs.Parse("test.stratum.yaml", []byte(src), exprlang.Compile)
	if sp == nil || ds.HasErrors() {
		t.Fatalf("spec does not parse:\n%s", ds.Error())
	}
	return sp
}

// fixture drives one flow through pure transitions, round-tripping the state
// through JSON after each one (as the store does) and keeping the child flows
// a transition created.
type fixture struct {
	t        *testing.T
	spec     *specs.Spec
	env      transitionEnv
	st       *state.FlowState
	flows    map[string][]byte // child flows, JSON as stored
	ids      int
	events   []Event
	lastPlan transitionResult
}

func (f *fixture) Get(id string) (*state.FlowState, error) {
	b, ok := f.flows[id]
	if !ok {
		return nil, fmt.Errorf("flow %s: %w", id, ErrNotFound)
	}
	var st state.FlowState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

func (f *fixture) nextID() string {
	f.ids++
	return fmt.Sprintf("flow-%d", f.ids)
}

// plan parses src and plans flow; it fails the test on an error.
func plan(t *testing.T, src, flow string, inputs map[string]any) (*fixture, map[string]any) {
	t.Helper()
	f := &fixture{t: t, spec: mustParse(t, src), flows: map[string][]byte{}}
	f.env = transitionEnv{Spec: f.spec, Now: t0, NewID: f.nextID, Children: f}
	st, res, err := planFlow(f.env, flow, inputs, PlanOptions{})
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	if st == nil {
		t.Fatalf("plan refused: %v", res.Wire())
	}
	f.env.Flow = f.spec.Flows[flow]
	f.st = st
	f.lastPlan = res
	f.absorb(res)
	f.roundTrip()
	return f, wire(t, res.Wire())
}

func (f *fixture) absorb(res transitionResult) {
	for _, p := range res.Put {
		b, err := json.Marshal(p)
		if err != nil {
			f.t.Fatal(err)
		}
		f.flows[p.FlowID] = b
	}
	for _, id := range res.Delete {
		delete(f.flows, id)
	}
	for _, e := range res.Events {
		if e.FlowID == "" || e.Time.IsZero() || e.Type == "" {
			f.t.Fatalf("malformed event %+v", e)
		}
	}
	f.events = append(f.events, res.Events...)
}

func (f *fixture) roundTrip() {
	b, err := json.Marshal(f.st)
	if err != nil {
		f.t.Fatal(err)
	}
	var st state.FlowState
	if err := json.Unmarshal(b, &st); err != nil {
		f.t.Fatal(err)
	}
	f.st = &st
}

// do runs a transition on the fixture's flow.
func (f *fixture) do(fn func(st *state.FlowState, env transitionEnv) (transitionResult, error)) map[string]any {
	f.t.Helper()
	res, err := fn(f.st, f.env)
	if err != nil {
		f.t.Fatalf("transition error: %v", err)
	}
	f.absorb(res)
	f.roundTrip()
	return wire(f.t, res.Wire())
}

func (f *fixture) stepDone(stepID string, result any) map[string]any {
	f.t.Helper()
	return f.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return stepDone(st, env, stepID, result)
	})
}

func (f *fixture) resolve(stepID string, o review.Outcome, mutate ...func(*review.Decision)) map[string]any {
	f.t.Helper()
	d := review.Decision{StepID: stepID, Outcome: o, Rationale: "because", ResolvedBy: review.Human, Channel: review.ChannelTUI, Reviewer: "ann"}
	for _, m := range mutate {
		m(&d)
	}
	return f.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) { return gateResolve(st, env, d) })
}

func (f *fixture) later(d time.Duration) { f.env.Now = f.env.Now.Add(d) }

// child returns a fixture over a child flow the parent created.
func (f *fixture) child(id string) *fixture {
	f.t.Helper()
	st, err := f.Get(id)
	if err != nil {
		f.t.Fatalf("child %s: %v", id, err)
	}
	c := *f
	c.st = st
	c.env.Flow = f.spec.Flows[st.FlowName]
	return &c
}

// save writes a child fixture's state back into the parent's flow map.
func (f *fixture) save(c *fixture) {
	b, _ := json.Marshal(c.st)
	f.flows[c.st.FlowID] = b
	f.ids = c.ids
}

// wire is an answer (a Response or an Outcome) as a client sees it (JSON
// round trip of what Wire renders).
func wire(t *testing.T, r any) map[string]any {
	t.Helper()
	if o, ok := r.(Outcome); ok {
		r = Wire(o, nil)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatalf("response is not JSON: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// expect checks keys of a wire response (numbers as float64 or int).
func expect(t *testing.T, got map[string]any, want map[string]any) {
	t.Helper()
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("key %q missing in %s", k, show(got))
			continue
		}
		if n, isInt := w.(int); isInt {
			w = float64(n)
		}
		if !reflect.DeepEqual(normalize(g), normalize(w)) {
			t.Errorf("%s = %s, want %s (in %s)", k, showV(g), showV(w), show(got))
		}
	}
}

func normalize(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

func show(m map[string]any) string { return showV(m) }

func showV(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func noKey(t *testing.T, got map[string]any, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if _, ok := got[k]; ok {
			t.Errorf("unexpected key %q in %s", k, show(got))
		}
	}
}

func strs(v any) []string {
	l, _ := v.([]any)
	out := make([]string, len(l))
	for i, x := range l {
		out[i] = fmt.Sprint(x)
	}
	return out
}

func traceTypes(v any) string {
	l, _ := v.([]any)
	var parts []string
	for _, r := range l {
		m := r.(map[string]any)
		parts = append(parts, fmt.Sprintf("%s:%s", m["type"], m["step_id"]))
	}
	return strings.Join(parts, " ")
}

func recordTypes(rs []state.Record) string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, r.Type+":"+r.StepID)
	}
	return strings.Join(parts, " ")
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
