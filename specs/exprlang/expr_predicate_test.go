package exprlang

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stratum-go/stratum/specs"
)

// A deterministic predicate sees no names, calls only the first tier's
// builtins, and reads files only under artifacts/ or modified/ of the
// staged turn.
func TestPredicateExpressions(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "artifacts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "artifacts", "out.txt"), []byte("12 passed"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		src  string
		want bool
		err  string // compile error
	}{
		{src: "True", want: true},
		{src: "file_exists('artifacts/out.txt')", want: true},
		{src: "file_exists('modified/src/a.go')", want: false},
		{src: "file_contains('artifacts/out.txt', 'passed') and len('ab') == 2", want: true},
		{src: "file_contains('artifacts/out.txt', 'failed')", want: false},
		{src: "max(1, 2) == int('2') and str(1) == '1' and bool(1)", want: true},
		{src: "file_exists('src/a.go')", err: "deterministic predicate references path outside staging tree: 'src/a.go' (expected prefix 'artifacts/' or 'modified/')"},
		{src: "file_exists('artifacts/' + 'x')", err: "the path of file_exists() in a deterministic predicate must be a string literal starting with artifacts/ or modified/"},
		{src: "any([True])", err: "function 'any' is not available to a deterministic predicate (it may call bool, file_contains, file_exists, int, len, max, min, str)"},
		{src: "no_file_conflicts([])", err: "function 'no_file_conflicts' is not available to a deterministic predicate (it may call bool, file_contains, file_exists, int, len, max, min, str)"},
		{src: "result.ok", err: "name 'result' is not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			e, err := Compile(specs.ExprPredicate, tt.src)
			if tt.err != "" {
				if err == nil || err.(*specs.ExprError).Message != tt.err {
					t.Fatalf("compile: %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := e.EvalBool(specs.EvalEnv{Root: root})
			if err != nil || got != tt.want {
				t.Fatalf("= %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}
