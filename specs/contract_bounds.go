package specs

import (
	"fmt"
	"strings"
)

// Bounds of contract nesting. A contract's schema inlines the schemas of the
// contracts it contains, so a chain of contracts costs the square of its
// length and a contract that contains another twice doubles at each level:
// a few kilobytes of spec could expand to gigabytes. The bounds are checked
// on the containment graph, each contract resolved once, before any schema
// is built, so validation costs at most a fixed amount whatever the spec.
const (
	// MaxContractDepth is how deep contracts may contain contracts (a
	// contract with only primitive fields has depth 1).
	MaxContractDepth = 32
	// MaxContractNodes bounds the schemas of all the contracts together,
	// counted with contained contracts inlined: one node per field, per enum
	// value and per keyword value (maps and lists counted element by
	// element).
	MaxContractNodes = 50_000
)

// checkBounds marks too deep contracts, and contracts past the node budget,
// bad (no schema is built for them) and reports each once: on the outermost
// contract of a chain that is too deep (CodeContractDepth), on the first
// contract that does not fit the budget (CodeContractSize). Contracts already
// bad (cycles, unknown types) are skipped; containing one blocks a schema
// anyway.
func (b *contractBuilder) checkBounds() {
	refs := make(map[string][]string, len(b.order))
	own := make(map[string]int, len(b.order))
	for _, name := range b.order {
		for _, f := range b.contracts[name].Fields {
			if f == nil {
				continue
			}
			own[name] += 1 + len(f.Values) + valueNodes(f.Keywords, 0)
			for _, ref := range fieldTypeRefs(f.Type, f.Keywords, "") {
				if !isPrimitive(ref.typ) && b.contracts[ref.typ] != nil {
					refs[name] = append(refs[name], ref.typ)
				}
			}
		}
	}
	depth := make(map[string]int, len(b.order))
	nodes := make(map[string]int, len(b.order))
	deepest := make(map[string]string, len(b.order)) // the contained contract of greatest depth
	// Post-order over the containment graph with an explicit stack (a chain
	// may be as long as the spec allows), each contract resolved once.
	type frame struct {
		name string
		next int
	}
	for _, root := range b.order {
		if _, done := depth[root]; done || b.bad[root] {
			continue
		}
		stack := []frame{{root, 0}}
		depth[root] = -1 // on the stack
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if rs := refs[top.name]; top.next < len(rs) {
				r := rs[top.next]
				top.next++
				if _, seen := depth[r]; !seen && !b.bad[r] {
					depth[r] = -1
					stack = append(stack, frame{r, 0})
				}
				continue
			}
			n := top.name
			d, size := 1, own[n]
			for _, r := range refs[n] {
				if b.bad[r] || depth[r] < 0 {
					continue
				}
				if depth[r]+1 > d {
					d, deepest[n] = depth[r]+1, r
				}
				size = min(size+nodes[r], MaxContractNodes+1)
			}
			depth[n], nodes[n] = d, size
			stack = stack[:len(stack)-1]
		}
	}

	b.markTooDeep(refs, depth, deepest)
	b.markTooLarge(nodes)
}

// valueNodes counts the nodes of a keyword value (maps and lists element by
// element), stopping at MaxContractNodes.
func valueNodes(v any, n int) int {
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			if n > MaxContractNodes {
				return n
			}
			n = valueNodes(e, n+1)
		}
	case []any:
		for _, e := range x {
			if n > MaxContractNodes {
				return n
			}
			n = valueNodes(e, n+1)
		}
	}
	return n
}

// markTooDeep marks every contract whose containment chain is deeper than
// MaxContractDepth bad, and reports the outermost of each chain once.
func (b *contractBuilder) markTooDeep(refs map[string][]string, depth map[string]int, deepest map[string]string) {
	tooDeep := map[string]bool{}
	for _, name := range b.order {
		if depth[name] > MaxContractDepth {
			tooDeep[name] = true
		}
	}
	contained := map[string]bool{}
	for name := range tooDeep {
		for _, r := range refs[name] {
			contained[r] = true
		}
	}
	for _, name := range b.order {
		if !tooDeep[name] {
			continue
		}
		b.bad[name] = true
		if contained[name] {
			continue
		}
		chain := []string{name}
		for n := deepest[name]; n != "" && len(chain) < 4; n = deepest[n] {
			chain = append(chain, n)
		}
		b.problem(name, "", CodeContractDepth,
			fmt.Sprintf("contract '%s' contains contracts %d deep (%s → …); the limit is %d", name, depth[name], strings.Join(chain, " → "), MaxContractDepth),
			"flatten the nesting, or use type: object for a deep field")
	}
}

// markTooLarge marks the first contract past the node budget, counted in
// declaration order, and every one declared after it bad, and reports it.
func (b *contractBuilder) markTooLarge(nodes map[string]int) {
	total := 0
	for i, name := range b.order {
		if b.bad[name] {
			continue
		}
		total = min(total+nodes[name], MaxContractNodes+1)
		if total <= MaxContractNodes {
			continue
		}
		left := 0
		for _, n := range b.order[i:] {
			if !b.bad[n] {
				b.bad[n] = true
				left++
			}
		}
		b.problem(name, "", CodeContractSize,
			fmt.Sprintf("the contracts' schemas, contained contracts inlined, grow past %d nodes at contract '%s'; it and %d contracts declared after it are not compiled", MaxContractNodes, name, left-1),
			"contain a contract in fewer places, or use type: object for large nested fields")
		return
	}
}
