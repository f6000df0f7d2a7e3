package stratum

import (
	"context"
	"testing"

	"github.com/stratum-go/stratum/engine"
)

// Rule 21: a Flow.Run inside another is stored as a child of its flow:
// its parent_flow_id is the enclosing flow's id (query flow, the TUI's
// tree), and a flow run at the top has none.
func TestNestedFlowIsAChild(t *testing.T) {
	fake := newFake(t, `{"label": "positive", "confidence": 0.9}`)
	t.Setenv("STRATUM_HOME", t.TempDir())
	t.Chdir(t.TempDir())
	st := openShared(t)
	_, ctx := fake.runtime(t, Options{Store: st})
	fn := classify(t, Spec[textIn, sentiment]{})
	inner := NewFlow("inner", Budget{}, func(ctx context.Context, in textIn) (string, error) {
		_, err := fn.Call(ctx, in)
		return FlowID(ctx), err
	})
	var innerID string
	outer := NewFlow("outer", Budget{}, func(ctx context.Context, in textIn) (string, error) {
		var err error
		innerID, err = inner.Run(ctx, in)
		return FlowID(ctx), err
	})
	outerID, err := outer.Run(ctx, textIn{Text: "great"})
	if err != nil {
		t.Fatal(err)
	}
	svc := &engine.Service{Store: st}
	child, err := svc.Query().Get(context.Background(), innerID)
	if err != nil || child.ParentFlowID == nil || *child.ParentFlowID != outerID {
		t.Fatalf("child %s: parent %v, %v", innerID, child.ParentFlowID, err)
	}
	parent, err := svc.Query().Get(context.Background(), outerID)
	if err != nil || parent.ParentFlowID != nil {
		t.Fatalf("parent: %v, %v", parent.ParentFlowID, err)
	}
	sums, _ := svc.Query().List(context.Background(), engine.ListFilter{})
	found := false
	for _, s := range sums {
		if s.FlowID == innerID {
			found = s.ParentFlowID == outerID
		}
	}
	if !found {
		t.Fatalf("summaries %+v", sums)
	}
}
