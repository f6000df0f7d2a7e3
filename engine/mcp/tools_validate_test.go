package mcp

import (
	"fmt"
	"strings"
	"testing"
)

// stratum_validate has the validator's bound: a 7.7 KB chain of nested
// contracts (it held the server for 30 s at 1.5 GB) is one contract-depth
// error, answered at once.
func TestValidateContractChainBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: \"0.2\"\ncontracts:\n")
	const n = 300
	for i := range n {
		if i < n-1 {
			fmt.Fprintf(&b, "  C%d: {a: {type: C%d}}\n", i, i+1)
		} else {
			fmt.Fprintf(&b, "  C%d: {a: {type: string}}\n", i)
		}
	}
	b.WriteString("functions:\n  f: {mode: infer, intent: x, input: {}, output: C0}\nflows:\n  main:\n    input: {}\n    steps:\n      - {id: s, function: f}\n")
	var r map[string]any
	allocs := testing.AllocsPerRun(1, func() { r = validate(b.String()) })
	errs, _ := r["errors"].([]map[string]any)
	if r["valid"] != false || len(errs) != 1 || errs[0]["code"] != "contract-depth" {
		t.Fatalf("validate = %v", r)
	}
	if allocs > 200_000 {
		t.Errorf("%.0f allocations to validate %d bytes", allocs, b.Len())
	}
}
