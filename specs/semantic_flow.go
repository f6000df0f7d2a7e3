package specs

import (
	"fmt"
	"sort"
	"strings"

	"github.com/stratum-go/stratum/specs/py"
)

// checkRecursion reports flow steps whose sub-flow leads back to the flow.
func (c *checker) checkRecursion(b *build) {
	children := map[string][]string{}
	for _, name := range b.spec.FlowNames {
		for _, ss := range b.flows[name].steps {
			if ss.s.Kind == KindFlow && ss.s.Flow != "" && b.flows[ss.s.Flow] != nil {
				children[name] = append(children[name], ss.s.Flow)
			}
		}
	}
	// pathTo returns a path of flow names from `from` to `to` (inclusive), or nil.
	pathTo := func(from, to string) []string {
		prev := map[string]string{from: ""}
		queue := []string{from}
		for len(queue) > 0 {
			cur := queue[0]
			queue = queue[1:]
			if cur == to {
				var p []string
				for x := cur; x != ""; x = prev[x] {
					p = append(p, x)
					if x == from {
						break
					}
				}
				for i, j := 0, len(p)-1; i < j; i, j = i+1, j-1 {
					p[i], p[j] = p[j], p[i]
				}
				return p
			}
			for _, ch := range children[cur] {
				if _, seen := prev[ch]; !seen {
					prev[ch] = cur
					queue = append(queue, ch)
				}
			}
		}
		return nil
	}
	type pair struct{ from, to string }
	memo := map[pair][]string{}
	for _, name := range b.spec.FlowNames {
		fls := b.flows[name]
		for _, ss := range fls.steps {
			if ss.s.Kind != KindFlow || ss.s.Flow == "" || b.flows[ss.s.Flow] == nil {
				continue
			}
			key := pair{ss.s.Flow, name}
			p, ok := memo[key]
			if !ok {
				p = pathTo(ss.s.Flow, name)
				memo[key] = p
			}
			if p == nil {
				continue
			}
			chain := append([]string{name}, p...)
			c.add(CodeRecursiveFlow, ss.m.valNode("flow"), ss.spath(name)+".flow",
				fmt.Sprintf("Recursive flow reference detected: %s", strings.Join(chain, " → ")),
				"A flow may not invoke itself, directly or through other flows.")
		}
	}
}

// checkWorkflow finds the entry flow and compares the input keys.
func (c *checker) checkWorkflow(b *build) {
	w := b.spec.Workflow
	if w == nil || b.wf == nil {
		return
	}
	switch {
	case w.Name != "" && b.spec.Flows[w.Name] != nil:
		w.EntryFlow = w.Name
	case len(b.spec.FlowNames) == 1:
		w.EntryFlow = b.spec.FlowNames[0]
	default:
		if b.wf.bad["name"] {
			return
		}
		msg := fmt.Sprintf("Workflow '%s': cannot determine entry flow (no flow named '%s' and the spec has %d flows)",
			w.Name, w.Name, len(b.spec.FlowNames))
		c.add(CodeWorkflowEntry, b.wf.valNode("name"), "workflow.name", msg,
			"Name the entry flow like the workflow, or keep exactly one flow in the spec.")
		return
	}
	if b.wf.bad["input"] || !b.wf.has("input") {
		return
	}
	entry := b.spec.Flows[w.EntryFlow]
	if em := b.flows[w.EntryFlow].m; !em.has("input") || em.bad["input"] {
		return // reported on the flow
	}
	var wk, fk []string
	for _, p := range w.Input {
		wk = append(wk, p.Name)
	}
	for _, p := range entry.Input {
		fk = append(fk, p.Name)
	}
	sort.Strings(wk)
	sort.Strings(fk)
	if strings.Join(wk, "\x00") != strings.Join(fk, "\x00") {
		c.add(CodeWorkflowInputs, b.wf.keyNode("input"), "workflow.input",
			fmt.Sprintf("Workflow input keys %s do not match entry flow '%s' input keys %s", py.ReprStrings(wk), w.EntryFlow, py.ReprStrings(fk)),
			"Declare exactly the entry flow's inputs under workflow.input.")
	}
}
