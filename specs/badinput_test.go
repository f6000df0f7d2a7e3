package specs

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// aliasBomb builds a billion-laughs document: levels of fan-fold aliases.
func badAliasBomb(levels, fan int) string {
	var b strings.Builder
	b.WriteString("version: \"0.2\"\nl0: &l0 [\"lol\"]\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [", i, i)
		for j := 0; j < fan; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*l%d", i-1)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

func badDeepNesting(depth int, flow bool) string {
	if flow {
		return "version: \"0.2\"\nx: " + strings.Repeat("[", depth) + strings.Repeat("]", depth) + "\n"
	}
	var b strings.Builder
	b.WriteString("version: \"0.2\"\n")
	for i := 0; i < depth; i++ {
		fmt.Fprintf(&b, "%sk%d:\n", strings.Repeat("  ", i), i)
	}
	fmt.Fprintf(&b, "%sv: 1\n", strings.Repeat("  ", depth))
	return b.String()
}

// runBounded runs f in a goroutine and fails on a panic or when it takes
// longer than the timeout.
func badRunBounded(t *testing.T, timeout time.Duration, f func()) {
	t.Helper()
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		f()
	}()
	select {
	case p := <-done:
		if p != nil {
			t.Fatalf("panic: %v", p)
		}
	case <-time.After(timeout):
		t.Fatalf("did not finish within %v", timeout)
	}
}

func TestBadInput(t *testing.T) {
	huge := bytes.Repeat([]byte("# padding padding padding padding padding padding padding\n"), (20<<20)/58+1)
	tests := []struct {
		name string
		src  []byte
		code string
		line int
		col  int
	}{
		{"empty", nil, CodeEmpty, 0, 0},
		{"blank", []byte("  \n\t\n  "), CodeEmpty, 0, 0},
		{"comment-only", []byte("# nothing\n"), CodeEmpty, 0, 0},
		{"non-mapping-list", []byte("- a\n- b\n"), CodeNotMapping, 1, 1},
		{"non-mapping-scalar", []byte("hello\n"), CodeNotMapping, 1, 1},
		{"invalid-utf8", []byte("version: \"0.2\"\nflows:\n  m\xffain: {}\n"), CodeInvalidUTF8, 3, 4},
		{"invalid-utf8-after-multibyte", []byte("a: \"é\xc3\"\n"), CodeInvalidUTF8, 1, 6},
		{"tab-indent", []byte("version: \"0.2\"\nflows:\n\tmain: {}\n"), CodeYAMLTab, 3, 1},
		{"tab-after-spaces", []byte("version: \"0.2\"\nflows:\n  main:\n  \tinput: {}\n"), CodeYAMLTab, 4, 3},
		{"alias-bomb", []byte(badAliasBomb(9, 9)), CodeYAMLAliases, 0, 0},
		{"alias-bomb-wide", []byte(badAliasBomb(4, 200)), CodeYAMLAliases, 0, 0},
		{"deep-block-50", []byte(badDeepNesting(50, false)), CodeTooDeep, 0, 0},
		{"deep-flow-50", []byte(badDeepNesting(50, true)), CodeTooDeep, 0, 0},
		{"deep-flow-20000", []byte(badDeepNesting(20000, true)), CodeTooDeep, 0, 0},
		{"too-large", huge, CodeTooLarge, 0, 0},
		{"unknown-version", []byte("version: \"7\"\n"), CodeUnknownVersion, 1, 10},
		{"unquoted-version", []byte("version: 0.2\nflows: {}\n"), CodeVersionNotString, 1, 10},
		{"multiple-documents", []byte("version: \"0.2\"\n---\nversion: \"0.2\"\n"), CodeMultipleDocuments, 0, 0},
		{"trailing-document-marker", []byte("version: \"0.2\"\n---\n"), CodeMultipleDocuments, 0, 0},
		{"yaml-syntax", []byte("version: \"0.2\"\nflows: {main: [\n"), CodeYAMLSyntax, 0, 0},
		{"control-char", []byte("version: \"0.2\x01\"\n"), CodeYAMLSyntax, 0, 0},
		{"duplicate-key", []byte("version: \"0.2\"\nversion: \"0.2\"\n"), CodeDuplicateKey, 2, 1},
		{"missing-version", []byte("flows: {}\n"), CodeMissingVersion, 1, 1},
		{"null-version", []byte("version: ~\n"), CodeUnknownVersion, 1, 10},
		{"list-version", []byte("version: [0.2]\n"), CodeUnknownVersion, 1, 10},
		{"recursive-alias", []byte("version: \"0.2\"\nx: &a [*a]\n"), CodeYAMLAliases, 2, 8},
		{"merge-of-scalar", []byte("version: \"0.2\"\nflows:\n  <<: 5\n"), CodeWrongType, 3, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ds Diagnostics
			var spec *Spec
			start := time.Now()
			badRunBounded(t, 10*time.Second, func() { spec, ds = Parse("t.yaml", tt.src, testCompile) })
			if spec != nil {
				t.Fatalf("spec accepted")
			}
			if !ds.HasErrors() {
				t.Fatalf("no error diagnostic")
			}
			if tt.code == "" {
				t.Logf("%v: %s", time.Since(start), dumpDiags(ds))
				return
			}
			want := wantDiag{code: tt.code, line: tt.line, col: tt.col}
			if tt.line == 0 {
				want.line = 0
			}
			expectDiags(t, ds, want)
			if ErrorTypeOf(tt.code) == ParseError && len(ds) != 1 {
				t.Errorf("a parse error stops checking; got:\n%s", dumpDiags(ds))
			}
		})
	}
}

func TestVersionNotStringKeepsChecking(t *testing.T) {
	_, ds := Parse("t.yaml", []byte("version: 0.1\nworkflow: {name: x, description: d, input: {}}\n"), testCompile)
	expectDiags(t, ds, wantDiag{CodeVersionNotString, "version", 1, 10}, wantDiag{CodeNeedsVersion, "workflow", 2, 1})
}

func TestParseFileTooLarge(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "big.stratum.yaml")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	// Sparse 20 MB file: ParseFile must refuse it without reading it whole.
	if err := f.Truncate(20 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	badRunBounded(t, 10*time.Second, func() {
		s, ds := ParseFile(p, testCompile)
		if s != nil || len(ds) != 1 || ds[0].Code != CodeTooLarge || ds[0].File != p {
			t.Errorf("want one too-large diagnostic, got:\n%s", dumpDiags(ds))
		}
	})
	s, ds := ParseFile(filepath.Join(dir, "missing.yaml"), testCompile)
	if s != nil || len(ds) != 1 || ds[0].Severity != SeverityError {
		t.Errorf("missing file: got %v", ds)
	}
}

// TestHugeSpecBounded: a large spec full of errors (unknown step names,
// unknown fields) is still checked in bounded time.
func TestHugeSpecBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: \"0.2\"\nflows:\n  main:\n    input: {}\n    steps:\n")
	for i := 0; i < 10000; i++ {
		fmt.Fprintf(&b, "      - {id: s%d, intent: x, depends_on: [z%d], inputs: {a: \"$.steps.q%d.output\"}, colr: 1}\n", i, i, i)
	}
	src := []byte(b.String())
	badRunBounded(t, 20*time.Second, func() {
		start := time.Now()
		s, ds := Parse("t.yaml", src, testCompile)
		if s != nil || len(ds) < 3*10000 {
			t.Errorf("want ≥ %d diagnostics, got %d", 3*10000, len(ds))
		}
		t.Logf("%d bytes, %d diagnostics in %v", len(src), len(ds), time.Since(start))
	})
}

// A spec with more distinct expressions than MaxExprs is refused before any
// is compiled (compiling tens of thousands would take seconds and gigabytes).
func TestTooManyExpressions(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: \"0.2\"\nflows:\n  main:\n    input: {}\n    steps:\n      - id: s\n        intent: x\n        ensure:\n")
	for i := 0; i < MaxExprs+500; i++ {
		fmt.Fprintf(&b, "          - \"result.x != %d\"\n", i)
	}
	done := make(chan Diagnostics, 1)
	go func() { _, ds := Parse("many.stratum.yaml", []byte(b.String()), testCompile); done <- ds }()
	select {
	case ds := <-done:
		found := false
		for _, d := range ds {
			if d.Code == CodeTooLarge && strings.Contains(d.Message, "distinct expressions") && d.Line > 0 {
				found = true
			}
		}
		if !found {
			t.Fatalf("want a too-large diagnostic for too many expressions, got:\n%s", ds.Error())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Parse did not return within 30 s")
	}
}
