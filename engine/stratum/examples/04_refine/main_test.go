package main

import (
	"flag"
	"testing"

	"github.com/stratum-go/stratum/engine/stratum/examples/internal/demo"
)

var record = flag.Bool("record", false, "re-record recording.replay against a scripted local server")

var script = []demo.Answer{
	{Match: "Write the Go function", Answers: []string{
		`{"source":"func reverse(s string) string {\n\tr := []rune(s)\n\tfor i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {\n\t\tr[i], r[j] = r[j], r[i]\n\t}\n\treturn string(r)\n}"}`,
		`{"source":"func Reverse(s string) string {\n\tr := []rune(s)\n\tfor i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {\n\t\tr[i], r[j] = r[j], r[i]\n\t}\n\treturn string(r)\n}"}`,
		`{"source":"// Reverse returns s with its runes in reverse order.\nfunc Reverse(s string) string {\n\tr := []rune(s)\n\tfor i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {\n\t\tr[i], r[j] = r[j], r[i]\n\t}\n\treturn string(r)\n}"}`,
	}},
}

const want = `// Reverse returns s with its runes in reverse order.
func Reverse(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}
`

// TestOffline: three iterations, one request each.
func TestOffline(t *testing.T) {
	rt := demo.Check(t, *record, recording, script, run, want)
	if tr := rt.Trace(); len(tr) != 1 || tr[0].Attempts != 3 {
		t.Fatalf("trace: %+v", tr)
	}
}
