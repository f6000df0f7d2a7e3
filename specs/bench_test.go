package specs

import (
	"fmt"
	"strings"
	"testing"
)

// genLargeSpec generates a valid v0.2 spec with nFuncs functions (each with
// ensures and guardrails) and nFlows flows totalling nSteps steps, chained by
// $.steps references and depends_on.
func genLargeSpec(nFuncs, nFlows, nSteps int) string {
	var b strings.Builder
	b.WriteString("version: \"0.2\"\ncontracts:\n")
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&b, "  C%d:\n    summary: {type: string}\n    score: {type: number, minimum: 0, maximum: 1}\n    items: {type: array}\n", i)
	}
	b.WriteString("functions:\n")
	for i := 0; i < nFuncs; i++ {
		fmt.Fprintf(&b, "  f%d:\n    mode: infer\n    intent: \"Do task %d with {text}\"\n    input: {text: {type: string}}\n    output: C%d\n", i, i, i%10)
		// Every ensure is distinct, so each one is really compiled.
		fmt.Fprintf(&b, "    ensure:\n      - \"result.score > 0.%03d\"\n      - \"len(result.items) >= %d and result.summary != ''\"\n    retries: 2\n    guardrails: [\"secret\", \"password\\\\s*=\"]\n", i, i+1)
	}
	b.WriteString("flows:\n")
	per := nSteps / nFlows
	for fl := 0; fl < nFlows; fl++ {
		fmt.Fprintf(&b, "  flow%d:\n    input: {text: {type: string}}\n    steps:\n", fl)
		for s := 0; s < per; s++ {
			fmt.Fprintf(&b, "      - id: s%d\n        function: f%d\n", s, (fl*per+s)%nFuncs)
			if s == 0 {
				b.WriteString("        inputs: {text: \"$.input.text\"}\n")
				continue
			}
			fmt.Fprintf(&b, "        inputs: {text: \"$.steps.s%d.output.summary\", orig: \"$.input.text\"}\n", s-1)
			if s >= 2 {
				fmt.Fprintf(&b, "        depends_on: [s%d]\n", s-2)
			}
		}
	}
	return b.String()
}

func TestLargeSpecValid(t *testing.T) {
	src := genLargeSpec(200, 4, 1000)
	s, ds := Parse("large.yaml", []byte(src), testCompile)
	if s == nil {
		t.Fatalf("large spec rejected:\n%s", dumpDiags(ds))
	}
	total := 0
	for _, f := range s.Flows {
		total += len(f.Steps)
		if len(f.Order) != len(f.Steps) {
			t.Fatalf("flow %s: order has %d of %d steps", f.Name, len(f.Order), len(f.Steps))
		}
	}
	if total != 1000 || len(s.Functions) != 200 {
		t.Fatalf("got %d steps, %d functions", total, len(s.Functions))
	}
}

func BenchmarkParseLarge(b *testing.B) {
	src := []byte(genLargeSpec(200, 4, 1000))
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		s, ds := Parse("large.yaml", src, testCompile)
		if s == nil {
			b.Fatalf("rejected: %v", ds)
		}
	}
}
