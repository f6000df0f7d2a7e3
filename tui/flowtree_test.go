package tui

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/state"
)

// nestFlows lists each child under its parent with tree glyphs, the roots
// and siblings in the pane's order; a child whose parent is absent is a
// root, and a parent cycle shows every flow once.
func TestNestFlows(t *testing.T) {
	for _, c := range []struct {
		name string
		// flows are "id" (a root) or "id<parent" in the pane's order.
		flows []string
		want  []string // "glyphs+id" in the order shown
	}{
		{"empty", nil, []string{}},
		{"flat", []string{"a", "b", "c"}, []string{"a", "b", "c"}},
		// Newest first: children are newer than their parent.
		{"parent and two children", []string{"c2<p", "c1<p", "p"},
			[]string{"p", "├─ c2", "└─ c1"}},
		{"grandchildren", []string{"g<c1", "c2<p", "x", "c1<p", "p", "y"},
			[]string{"x", "p", "├─ c2", "└─ c1", "   └─ g", "y"}},
		{"bar under a middle child", []string{"g<c1", "c1<p", "c2<p", "p"},
			[]string{"p", "├─ c1", "│  └─ g", "└─ c2"}},
		{"two trees keep the roots' order", []string{"q", "b<q", "a<p", "p"},
			[]string{"q", "└─ b", "p", "└─ a"}},
		{"orphan child is a root", []string{"c<gone", "p", "d<p"},
			[]string{"c", "p", "└─ d"}},
		{"own parent", []string{"a<a", "b"}, []string{"a", "b"}},
		{"cycle", []string{"a<b", "b<a", "c"}, []string{"a", "└─ b", "c"}},
		{"cycle under a root", []string{"r", "a<b", "b<a", "c<r"},
			[]string{"r", "└─ c", "a", "└─ b"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ids, parents := make([]string, len(c.flows)), make([]string, len(c.flows))
			for i, f := range c.flows {
				ids[i], parents[i], _ = strings.Cut(f, "<")
			}
			order, prefix := nestFlows(ids, parents)
			got := []string{}
			for k, i := range order {
				got = append(got, prefix[k]+ids[i])
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

// nestedFixture adds to f's store a "release" flow with two child flows,
// the first with a child of its own (as a spec's sub-flow steps or a Go
// program's nested Flow.Run store them: ParentFlowID), and returns their
// ids in the order the pane shows them.
func nestedFixture(t *testing.T, f *fixture) []string {
	t.Helper()
	ctx := context.Background()
	var ids []string
	for _, in := range []string{"release", "build", "unit", "check"} {
		r, err := f.svc.Plan(ctx, gateSpec, "deploy", map[string]any{"name": in}, engine.PlanOptions{SpecFile: "deploy.stratum.yaml"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, engine.FlowIDOf(r))
	}
	parent := map[int]int{1: 0, 2: 1, 3: 0} // build, unit, check
	err := f.store.Update(ctx, func(tx engine.Tx) error {
		for i, id := range ids {
			st, err := tx.Get(id)
			if err != nil {
				return err
			}
			st.FlowName = []string{"release", "build", "unit", "check"}[i]
			if p, ok := parent[i]; ok {
				st.ParentFlowID = &ids[p]
			}
			expect := st.Version
			st.Version++
			sum := engine.Summarize(st, nil)
			sum.Status, sum.CurrentStep, sum.StepNumber, sum.TotalSteps = st.Status, "build", 1, 2
			if err := tx.Put(st, sum, expect); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// As shown: release, then its children newest first (check, build),
	// build's child under it.
	return []string{ids[0], ids[3], ids[1], ids[2]}
}

// The Flows pane lists a child flow under its parent (golden frame), the
// cursor walks the rows in the order shown, and a filter that hides the
// parent shows its child as a root.
func TestFlowsPaneNestsChildren(t *testing.T) {
	f := newFixture(t)
	ids := nestedFixture(t, f)
	m := newModel(t, f.src, 80, 24)
	press(m, "1")
	frame := m.View()
	checkFrame(t, frame, 80, 24)
	golden(t, "flows_nested_80x24", frame)
	p, _ := paneOf[*flowsPane](t, m)
	for k, id := range ids {
		if got := p.selectedFlow(&m.common); got != id {
			t.Errorf("row %d: selected %s, want %s", k, got, id)
		}
		press(m, "down")
	}
	// Filter on the grandchild's name: its parent is filtered out.
	press(m, "/")
	typeText(m, "unit")
	press(m, "enter")
	if got := p.selectedFlow(&m.common); got != ids[3] {
		t.Fatalf("filtered: selected %s, want %s", got, ids[3])
	}
	if tree := m.flows.prefix[ids[3]]; tree != "" {
		t.Errorf("filtered: the orphaned child has glyphs %q, want a root", tree)
	}
	if !strings.Contains(m.View(), "  unit ") {
		t.Errorf("filtered frame lacks the child as a root:\n%s", m.View())
	}
}

// The window nests page by page: a child whose parent is on the next page
// stays on its own as a root, so no row changes page.
func TestWindowNestsPerPage(t *testing.T) {
	w := flowWindow{}
	for i := range windowPage + 2 {
		w.rows = append(w.rows, state.FlowSummary{FlowID: fmt.Sprint("f", i)})
	}
	last := windowPage - 1
	w.rows[last].ParentFlowID = w.rows[windowPage].FlowID // on the next page
	w.rows[0].ParentFlowID = w.rows[1].FlowID             // on its page
	w.nest()
	if w.rows[last].FlowID != fmt.Sprint("f", last) || w.prefix[w.rows[last].FlowID] != "" {
		t.Errorf("row %d: %s with glyphs %q, want f%d as a root", last, w.rows[last].FlowID, w.prefix[w.rows[last].FlowID], last)
	}
	if w.rows[0].FlowID != "f1" || w.rows[1].FlowID != "f0" || w.prefix["f0"] != treeLast {
		t.Errorf("page 0 starts %s, %s (glyphs %q), want f1, then f0 under it", w.rows[0].FlowID, w.rows[1].FlowID, w.prefix["f0"])
	}
}

// BenchmarkWindowNest is the nesting a pass adds: a full window (three
// pages) where every other flow is the child of the next.
func BenchmarkWindowNest(b *testing.B) {
	rows := make([]state.FlowSummary, 3*windowPage)
	for i := range rows {
		rows[i].FlowID = fmt.Sprint("f", i)
		if i%2 == 0 {
			rows[i].ParentFlowID = fmt.Sprint("f", i+1)
		}
	}
	w := flowWindow{rows: make([]state.FlowSummary, len(rows))}
	b.ReportAllocs()
	for b.Loop() {
		copy(w.rows, rows)
		w.nest()
	}
}
