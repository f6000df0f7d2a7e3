package specs

import "sort"

// kahnOrder is the original's step ordering: Kahn's algorithm with a FIFO
// ready-queue. deps[i] lists the steps that i depends on (indexes). The
// initial queue holds the zero in-degree steps in declaration order; a step
// that becomes ready is appended to the back; the dependents of a finished
// step are visited in declaration order. Steps on or behind a cycle are left
// out of order and returned as stuck.
func kahnOrder(deps [][]int) (order []int, stuck []int) {
	n := len(deps)
	indeg := make([]int, n)
	dependents := make([][]int, n)
	for i, ds := range deps {
		indeg[i] = len(ds)
		for _, d := range ds {
			dependents[d] = append(dependents[d], i)
		}
	}
	for _, dl := range dependents {
		sort.Ints(dl)
	}
	queue := make([]int, 0, n)
	for i := range n {
		if indeg[i] == 0 {
			queue = append(queue, i)
		}
	}
	for head := 0; head < len(queue); head++ {
		u := queue[head]
		order = append(order, u)
		for _, v := range dependents[u] {
			indeg[v]--
			if indeg[v] == 0 {
				queue = append(queue, v)
			}
		}
	}
	if len(order) < n {
		done := make([]bool, n)
		for _, i := range order {
			done[i] = true
		}
		for i := range n {
			if !done[i] {
				stuck = append(stuck, i)
			}
		}
	}
	return order, stuck
}

// findCycles returns one dependency cycle per strongly connected component
// of the stuck steps that contains a cycle, each as a list of indexes starting
// at its lowest index, in which every step depends on the next one (and the
// last on the first).
func findCycles(deps [][]int, stuck []int) [][]int {
	inSet := map[int]bool{}
	for _, i := range stuck {
		inSet[i] = true
	}
	sccs := stronglyConnected(stuck, func(v int) []int {
		var succ []int
		for _, w := range deps[v] {
			if inSet[w] {
				succ = append(succ, w)
			}
		}
		return succ
	})
	var out [][]int
	for _, comp := range sccs {
		inComp := map[int]bool{}
		lo := comp[0]
		for _, v := range comp {
			inComp[v] = true
			lo = min(lo, v)
		}
		selfLoop := false
		for _, d := range deps[lo] {
			selfLoop = selfLoop || d == lo
		}
		if len(comp) == 1 && !selfLoop {
			continue
		}
		if selfLoop {
			out = append(out, []int{lo})
			continue
		}
		// Walk from the lowest index along the lowest in-component
		// dependency until a step repeats; rotate to the lowest index.
		pos := map[int]int{}
		var path []int
		cur := lo
		for {
			if p, ok := pos[cur]; ok {
				cyc := append([]int(nil), path[p:]...)
				m := 0
				for i, v := range cyc {
					if v < cyc[m] {
						m = i
					}
				}
				out = append(out, append(cyc[m:], cyc[:m]...))
				break
			}
			pos[cur] = len(path)
			path = append(path, cur)
			nxt := -1
			for _, d := range deps[cur] {
				if inComp[d] && (nxt == -1 || d < nxt) {
					nxt = d
				}
			}
			cur = nxt
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// stronglyConnected returns the strongly connected components of the graph
// reachable from roots (Tarjan's algorithm), each as a list of nodes; succ
// gives a node's successors in a stable order.
func stronglyConnected[T comparable](roots []T, succ func(T) []T) [][]T {
	index := map[T]int{}
	low := map[T]int{}
	onStack := map[T]bool{}
	var stack []T
	var sccs [][]T
	next := 0
	var strong func(v T)
	strong = func(v T) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range succ(v) {
			if _, seen := index[w]; !seen {
				strong(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			var comp []T
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				comp = append(comp, w)
				if w == v {
					break
				}
			}
			sccs = append(sccs, comp)
		}
	}
	for _, v := range roots {
		if _, seen := index[v]; !seen {
			strong(v)
		}
	}
	return sccs
}
