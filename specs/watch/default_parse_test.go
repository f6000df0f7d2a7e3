package watch

import (
	"os"
	"path/filepath"
	"testing"
)

const validSpec = `version: "0.1"
contracts:
  SentimentResult:
    label: {type: string}
    confidence: {type: number}
functions:
  classify:
    mode: infer
    intent: "Classify the sentiment of this text"
    input: {text: {type: string}}
    output: SentimentResult
    ensure:
      - "result.label != ''"
flows:
  run:
    input: {text: {type: string}}
    output: SentimentResult
    steps:
      - id: s1
        function: classify
        inputs: {text: "$.input.text"}
`

// With the zero Parse option the watcher uses specs.ParseFile.
func TestWatchDefaultParser(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.stratum.yaml")
	writeFile(t, a, validSpec)
	opts := DefaultOptions()
	opts.Debounce = fsDebounce
	w, err := New([]string{dir}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	r := &recv{t: t, w: w}
	// The initial scan reads the complete file.
	if u := r.next(); u.Path != a || u.Spec == nil || u.Diags.HasErrors() || u.Spec.Flows["run"] == nil {
		t.Fatalf("valid spec: spec %v, diags %v", u.Spec, u.Diags)
	}
	// Broken by an editor's atomic save: reported with a position.
	tmp := filepath.Join(dir, ".a.stratum.yaml.swp")
	writeFile(t, tmp, "version: \"0.1\"\nflows: [unclosed\n")
	if err := os.Rename(tmp, a); err != nil {
		t.Fatal(err)
	}
	u := r.next()
	if u.Path != a || u.Spec != nil || !u.Diags.HasErrors() {
		t.Fatalf("broken spec: spec %v, diags %v", u.Spec, u.Diags)
	}
	if d := u.Diags.Errors()[0]; d.File != a || d.Line == 0 {
		t.Errorf("diagnostic without file or position: %+v", d)
	}
}
