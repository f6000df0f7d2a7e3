package specs

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMigrate(t *testing.T) {
	src := "# keep me\nversion: \"0.2\"\nflows:\n  m:\n    input: {}\n    steps:\n      - {id: a, intent: x}\n      - {id: b, intent: y}\n      - {id: c, intent: z}\n"
	m, err := Migrate("f.yaml", []byte(src), "", testCompile)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(src, `"0.2"`, `"0.3"`, 1)
	if string(m.Output) != want || m.From != "0.2" || m.To != "0.3" || len(m.Transforms) != 1 {
		t.Fatalf("%+v\n%s", m, m.Output)
	}
	wantDiff := "--- f.yaml (before)\n+++ f.yaml (after)\n@@ -1,5 +1,5 @@\n # keep me\n-version: \"0.2\"\n+version: \"0.3\"\n flows:\n   m:\n     input: {}\n"
	if m.Diff != wantDiff {
		t.Fatalf("diff\n%s\nwant\n%s", m.Diff, wantDiff)
	}
	if m, err := Migrate("f.yaml", m.Output, "0.3", testCompile); err != nil || len(m.Transforms) != 0 || m.Diff != "" {
		t.Fatalf("at the target: %+v %v", m, err)
	}
	for _, c := range []struct {
		src, to string
		want    error
	}{
		{src, "0.9", ErrUnknownVersion},
		{strings.Replace(src, `"0.2"`, `"7"`, 1), "", ErrUnknownVersion},
		{strings.Replace(src, `"0.2"`, `"0.3"`, 1), "0.2", ErrNoTransformPath},
	} {
		if _, err := Migrate("f.yaml", []byte(c.src), c.to, testCompile); !errors.Is(err, c.want) {
			t.Errorf("to %q: %v, want %v", c.to, err, c.want)
		}
	}
	var ds Diagnostics
	if _, err := Migrate("f.yaml", []byte("version: \"0.2\"\nflows: {m: {input: {}, steps: [{id: a}]}}\n"), "", testCompile); !errors.As(err, &ds) {
		t.Errorf("invalid source: %v", err)
	}
}

// TestMigrateFileJSON pins `stratum migrate --json`'s answer: the keys in
// the original's (sorted) order, an empty transforms list as [], and a
// write only with --yes.
func TestMigrateFileJSON(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a.stratum.yaml")
	src := "version: \"0.3\"\nflows:\n  m:\n    input: {}\n    steps:\n      - {id: a, intent: x}\n"
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	rep, status, err := MigrateFile(file, MigrateOptions{JSON: true, Yes: true}, testCompile, strings.NewReader(""), &out)
	if err != nil || status != 0 || out.Len() != 0 {
		t.Fatalf("status %d, err %v, printed %q", status, err, out.String())
	}
	got, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"diff":"","file":"` + file + `","from":"0.3","output":"` + file + `","to":"0.3","transforms":[],"written":false}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if _, status, err := MigrateFile(file, MigrateOptions{To: "0.9", JSON: true}, testCompile, nil, &out); status != MigrateVersion || !errors.Is(err, ErrUnknownVersion) {
		t.Fatalf("--to 0.9: status %d, err %v", status, err)
	}
}
