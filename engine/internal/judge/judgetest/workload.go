// Package judgetest builds the judge's benchmark workload once, for the
// kernel's benchmark (engine/internal/judge) and the same turn over MCP
// (engine/mcp): 1,000 deterministic predicates, each reading one of 5,000
// artifacts and looking for one of 5,000 modified files written under a
// workspace — 10,000 staged files in all.
package judgetest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Predicate is one deterministic predicate of the workload.
type Predicate struct {
	ID, Statement string
}

// Workload is a judge turn's evidence and the judge step that checks it.
type Workload struct {
	// Artifacts are the turn's artifacts by name (each staged as
	// artifacts/NAME.txt).
	Artifacts map[string]string
	// Modified are the modified files, relative to the workspace.
	Modified []string
	// Predicates are the step's predicates, all met by the evidence.
	Predicates []Predicate
	// Spec is a spec whose flow f has the judge step j (stakes cheap) of
	// Predicates.
	Spec string
}

// Write writes the modified files under ws and returns the workload.
func Write(tb testing.TB, ws string) Workload {
	tb.Helper()
	w := Workload{Artifacts: map[string]string{}}
	for i := range 5000 {
		w.Artifacts[fmt.Sprintf("out%d", i)] = fmt.Sprintf("result %d: 12 passed\n", i)
		rel := fmt.Sprintf("src/d%d/f%d.go", i%50, i)
		if err := os.MkdirAll(filepath.Join(ws, filepath.Dir(rel)), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, rel), []byte("package d\n// line "+fmt.Sprint(i)+"\n"), 0o644); err != nil {
			tb.Fatal(err)
		}
		w.Modified = append(w.Modified, rel)
	}
	var spec strings.Builder
	spec.WriteString("version: \"0.3\"\nflows:\n  f:\n    input: {}\n    steps:\n      - id: j\n        judge:\n          stakes: cheap\n          predicates:\n")
	for i := range 1000 {
		p := Predicate{ID: fmt.Sprintf("p%d", i), Statement: fmt.Sprintf(`file_contains('artifacts/out%d.txt', '12 passed') and file_exists('modified/src/d%d/f%d.go')`, i*5, (i*5)%50, i*5)}
		fmt.Fprintf(&spec, "            - {id: %s, type: deterministic, statement: \"%s\"}\n", p.ID, p.Statement)
		w.Predicates = append(w.Predicates, p)
	}
	w.Spec = spec.String()
	return w
}
