package engine_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/clijson"
	"github.com/stratum-go/stratum/engine/state"
)

// countingStore counts Tx.List calls, to check an exact id resolves
// without listing.
type countingStore struct {
	engine.Store
	lists *int
}

func (c countingStore) View(ctx context.Context, fn func(engine.Tx) error) error {
	return c.Store.View(ctx, func(tx engine.Tx) error { return fn(countingTx{tx, c.lists}) })
}

type countingTx struct {
	engine.Tx
	lists *int
}

func (c countingTx) List(f engine.ListFilter) ([]state.FlowSummary, error) {
	*c.lists++
	return c.Tx.List(f)
}

func TestResolveFlowID(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newService()
	ids := []string{"abcd1111-0000", "abcd2222-0000", "abce3333-0000"}
	n := 0
	s.NewID = func() string { n++; return ids[n-1] }
	for range ids {
		must(t)(s.Plan(ctx, querySpec, "solo", nil, engine.PlanOptions{}))
	}
	var lists int
	s.Store = countingStore{s.Store, &lists}

	got, err := s.Query().ResolveFlowID(ctx, "abce3333-0000")
	if err != nil || got != "abce3333-0000" || lists != 0 {
		t.Errorf("exact id: %q, %v, %d listings; want the id, no listing", got, err, lists)
	}
	for _, prefix := range []string{"abce", "abce3", "abcd1", "abcd2222-"} {
		got, err := s.Query().ResolveFlowID(ctx, prefix)
		if err != nil || !strings.HasPrefix(got, prefix) || len(got) != len(ids[0]) {
			t.Errorf("unique prefix %q: %q, %v", prefix, got, err)
		}
	}

	_, err = s.Query().ResolveFlowID(ctx, "abcd")
	e := engine.AsError(err)
	if e == nil || e.Type != engine.ErrTypeAmbiguousFlowID || !reflect.DeepEqual(e.Candidates, ids[:2]) {
		t.Fatalf("ambiguous prefix: %#v", err)
	}
	if !strings.Contains(e.Message, "abcd1111-0000, abcd2222-0000") {
		t.Errorf("the message lists the candidates: %q", e.Message)
	}
	w := engine.Wire(nil, err)
	if w["error_type"] != "ambiguous_flow_id" || !reflect.DeepEqual(w["candidates"], ids[:2]) {
		t.Errorf("wire: %v", w)
	}

	// Too short, unknown, empty: the Service's own flow_not_found answer.
	for _, in := range []string{"abc", "a", "zzzz", "abcd1111-0000-more", ""} {
		_, err := s.Query().ResolveFlowID(ctx, in)
		_, want := s.Resume(ctx, in)
		if e := engine.AsError(err); e == nil || e.Type != engine.ErrTypeFlowNotFound {
			t.Errorf("%q: %v, want flow_not_found", in, err)
			continue
		}
		if !reflect.DeepEqual(engine.Wire(nil, err), engine.Wire(nil, want)) {
			t.Errorf("%q: %v, want the Service's %v", in, engine.Wire(nil, err), engine.Wire(nil, want))
		}
	}

	// A store failure is the store's, not an envelope.
	boom := errors.New("boom")
	s.Store = failingView{s.Store, boom}
	if _, err := s.Query().ResolveFlowID(ctx, "abcd"); !errors.Is(err, boom) || engine.AsError(err) != nil {
		t.Errorf("store failure: %v", err)
	}
}

type failingView struct {
	engine.Store
	err error
}

func (f failingView) View(context.Context, func(engine.Tx) error) error { return f.err }

func TestQueryFlowRefused(t *testing.T) {
	if got := clijson.FlowRefused("zz", nil); !reflect.DeepEqual(got, clijson.FlowNotFound("zz")) {
		t.Errorf("not found: %v", got)
	}
	s, _, _ := newService()
	ids := []string{"abcd1", "abcd2"}
	n := 0
	s.NewID = func() string { n++; return ids[n-1] }
	ctx := context.Background()
	must(t)(s.Plan(ctx, querySpec, "solo", nil, engine.PlanOptions{}))
	must(t)(s.Plan(ctx, querySpec, "solo", nil, engine.PlanOptions{}))
	_, err := s.Query().ResolveFlowID(ctx, "abcd")
	got := cliJSON(t, clijson.FlowRefused("abcd", engine.AsError(err)))
	want := `{
  "_schema_version": "1",
  "error": {
    "candidates": [
      "abcd1",
      "abcd2"
    ],
    "code": "ambiguous_flow_id",
    "message": "Flow id prefix 'abcd' is ambiguous: it matches 2 flows (abcd1, abcd2); give more characters"
  },
  "ok": false
}
`
	if string(got) != want {
		t.Errorf("got\n%s", got)
	}
}
