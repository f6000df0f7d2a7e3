package specs

import (
	"fmt"
	"strings"
	"testing"
)

// contractChain is a spec of n contracts, each containing the next through
// width fields (width 1: a chain; width 2: a binary tree of n levels).
func contractChain(n, width int) string {
	var b strings.Builder
	b.WriteString("version: \"0.2\"\ncontracts:\n")
	for i := range n {
		fmt.Fprintf(&b, "  C%d: {", i)
		for w := range width {
			if w > 0 {
				b.WriteString(", ")
			}
			if i < n-1 {
				fmt.Fprintf(&b, "f%d: {type: C%d}", w, i+1)
			} else {
				fmt.Fprintf(&b, "f%d: {type: string}", w)
			}
		}
		b.WriteString("}\n")
	}
	b.WriteString(`functions:
  f: {mode: infer, intent: "x", input: {}, output: C0}
flows:
  main:
    input: {}
    steps:
      - {id: s, function: f}
`)
	return b.String()
}

// A chain of nested contracts is resolved once and refused past
// MaxContractDepth with one diagnostic on its outermost contract; a tree of
// contracts that doubles at each level is refused past MaxContractNodes. The
// work is counted (allocations), not timed: before the bound a chain cost
// the cube of its length (100 contracts 1 s, 200 10 s and 240 MB).
func TestContractNestingBounds(t *testing.T) {
	tests := []struct {
		name         string
		n, width     int
		code, path   string
		maxAllocsPer float64 // allocations per byte of spec
	}{
		{"chain-at-limit", MaxContractDepth, 1, "", "", 20},
		{"chain-past-limit", MaxContractDepth + 1, 1, CodeContractDepth, "contracts.C0", 20},
		{"chain-100", 100, 1, CodeContractDepth, "contracts.C0", 20},
		{"chain-400", 400, 1, CodeContractDepth, "contracts.C0", 20},
		{"chain-3000", 3000, 1, CodeContractDepth, "contracts.C0", 20},
		{"tree-12", 12, 2, "", "", 500}, // 8,190 nodes inlined: within the budget
		{"tree-20", 20, 2, CodeContractSize, "contracts.C0", 20},
		{"tree-30", 30, 2, CodeContractSize, "contracts.C0", 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := []byte(contractChain(tt.n, tt.width))
			var ds Diagnostics
			allocs := testing.AllocsPerRun(1, func() { _, ds = Parse("c.yaml", src, testCompile) })
			if tt.code == "" {
				if len(ds) != 0 {
					t.Fatalf("want no diagnostics, got:\n%s", dumpDiags(ds))
				}
			} else if len(ds) != 1 || ds[0].Code != tt.code || ds[0].Path != tt.path || ds[0].ErrorType != SemanticError {
				t.Fatalf("want one %s at %s, got:\n%s", tt.code, tt.path, dumpDiags(ds))
			}
			if per := allocs / float64(len(src)); per > tt.maxAllocsPer {
				t.Errorf("%.0f allocations for %d bytes of spec (%.0f a byte, want ≤ %.0f)", allocs, len(src), per, tt.maxAllocsPer)
			}
		})
	}
}
