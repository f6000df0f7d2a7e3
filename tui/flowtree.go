package tui

import "github.com/stratum-go/stratum/engine/state"

// The Flows pane nests child flows (a spec's sub-flow steps, a Go
// program's nested Flow.Run) under their parent: each child is listed
// directly under its parent, after the parent's earlier children,
// indented with tree glyphs in the FLOW column. The nesting is per page
// of the window (windowPage rows, a page boundary is where the listing's
// pages start), so a row never leaves its page and the paging's
// arithmetic (flowWindow.covers, pagesAround) holds; a child whose parent
// is not on its page (filtered out, gc'd, on another page) is a root.

// The tree glyphs before a child flow's name: its own branch (treeMid
// when a later sibling follows, treeLast for the last), after one
// continuation per ancestor below the root (treeBar while that ancestor
// has later siblings, treeGap when it has none).
const (
	treeMid  = "├─ "
	treeLast = "└─ "
	treeBar  = "│  "
	treeGap  = "   "
)

// nestFlows orders flows given by their ids and parents' ids (in the
// pane's order) as a tree: the roots keep their order, each flow's
// children follow it in theirs. It returns order (order[k] is the index
// of the k-th flow shown) and prefix (prefix[k] its tree glyphs, empty
// for a root). A flow is a root when its parent is not among ids or is
// itself; a parent cycle (which the engine never stores) is broken at its
// first flow, so every flow is shown exactly once.
func nestFlows(ids, parents []string) (order []int, prefix []string) {
	n := len(ids)
	index := make(map[string]int, n)
	for i, id := range ids {
		if _, dup := index[id]; !dup {
			index[id] = i
		}
	}
	children := make([][]int, n)
	root := make([]bool, n)
	for i := range ids {
		p, ok := index[parents[i]]
		if !ok || parents[i] == "" || p == i {
			root[i] = true
			continue
		}
		children[p] = append(children[p], i)
	}
	// reached marks the flows under a root; those that are not sit on a
	// cycle (or under one).
	reached := make([]bool, n)
	var mark func(i int)
	mark = func(i int) {
		if reached[i] {
			return
		}
		reached[i] = true
		for _, c := range children[i] {
			mark(c)
		}
	}
	for i := range ids {
		if root[i] {
			mark(i)
		}
	}
	order, prefix = make([]int, 0, n), make([]string, 0, n)
	shown := make([]bool, n)
	var emit func(i int, lead, branch string)
	emit = func(i int, lead, branch string) {
		shown[i] = true
		order, prefix = append(order, i), append(prefix, lead+branch)
		switch branch {
		case treeMid:
			lead += treeBar
		case treeLast:
			lead += treeGap
		}
		kids := children[i][:0:0]
		for _, c := range children[i] {
			if !shown[c] {
				kids = append(kids, c)
			}
		}
		for k, c := range kids {
			if shown[c] { // met again through a cycle
				continue
			}
			b := treeMid
			if k == len(kids)-1 {
				b = treeLast
			}
			emit(c, lead, b)
		}
	}
	for i := range ids {
		if !shown[i] && (root[i] || !reached[i]) {
			emit(i, "", "")
		}
	}
	return order, prefix
}

// nest orders the window's rows as trees (nestFlows), page by page, and
// keeps each child's tree glyphs for the FLOW column.
func (w *flowWindow) nest() {
	w.prefix = nil
	for from := 0; from < len(w.rows); from += windowPage {
		page := w.rows[from:min(len(w.rows), from+windowPage)]
		ids, parents := make([]string, len(page)), make([]string, len(page))
		for i := range page {
			ids[i], parents[i] = page[i].FlowID, page[i].ParentFlowID
		}
		order, prefix := nestFlows(ids, parents)
		sorted := make([]state.FlowSummary, len(page))
		for k, i := range order {
			sorted[k] = page[i]
			if prefix[k] != "" {
				if w.prefix == nil {
					w.prefix = map[string]string{}
				}
				w.prefix[page[i].FlowID] = prefix[k]
			}
		}
		copy(page, sorted)
	}
}
