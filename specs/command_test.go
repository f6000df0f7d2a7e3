package specs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateStatuses: `stratum validate`'s exit statuses — a missing
// path or one without a spec is a usage problem (2), an invalid spec 1,
// a valid one 0 — and its command-line problems.
func TestValidateStatuses(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.stratum.yaml")
	bad := filepath.Join(dir, "bad.stratum.yaml")
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(good, []byte("version: \"0.2\"\nflows:\n  m:\n    input: {}\n    steps:\n      - {id: a, intent: x}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("version: \"0.2\"\nflows: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		paths   []string
		status  int
		wantErr bool
	}{
		{[]string{good}, 0, false},
		{[]string{good, bad}, statusInvalid, false},
		{[]string{filepath.Join(dir, "missing.stratum.yaml")}, statusUsage, true},
		{[]string{empty}, statusUsage, true},
	} {
		var out strings.Builder
		status, err := ValidatePaths(tt.paths, FormatHuman, false, testCompile, &out)
		if status != tt.status || (err != nil) != tt.wantErr {
			t.Errorf("ValidatePaths(%v) = %d, %v; want %d (error %v)", tt.paths, status, err, tt.status, tt.wantErr)
		}
	}
	if status, err := PathsStatus(errors.New("watcher failed")); status != statusInvalid || err == nil {
		t.Errorf("PathsStatus(other) = %d, %v; want %d", status, err, statusInvalid)
	}
	if _, err := (ValidateLine{}).Check(); err == nil || !strings.Contains(err.Error(), "at least one FILE or DIR") {
		t.Errorf("Check() without paths = %v", err)
	}
	if f, err := (ValidateLine{Paths: []string{"."}, Format: FormatHuman, GitHub: true}).Check(); err != nil || f != FormatGitHub {
		t.Errorf("Check() under GitHub Actions = %q, %v; want github", f, err)
	}
	if _, err := (ValidateLine{Paths: []string{"."}, Format: "xml", FormatSet: true}).Check(); err == nil {
		t.Error("Check() --format xml: no error")
	}
}

// TestCompileTo: `stratum compile` writes the spec to stdout, or to
// --output with a line on stderr; a tasks directory that is not one is
// exit 1 with the compiler's error type.
func TestCompileTo(t *testing.T) {
	var stdout, stderr strings.Builder
	status, err := CompileTo(filepath.Join(speckitDir, "sequential"), "build", "", testCompile, &stdout, &stderr)
	if status != 0 || err != nil || !strings.HasPrefix(stdout.String(), "version: \"0.1\"") || stderr.Len() != 0 {
		t.Fatalf("to stdout: %d, %v, stdout %q, stderr %q", status, err, stdout.String(), stderr.String())
	}
	out := filepath.Join(t.TempDir(), "tasks.stratum.yaml")
	stdout.Reset()
	status, err = CompileTo(filepath.Join(speckitDir, "sequential"), "tasks", out, testCompile, &stdout, &stderr)
	if status != 0 || err != nil || stdout.Len() != 0 {
		t.Fatalf("to a file: %d, %v, stdout %q", status, err, stdout.String())
	}
	if want := "wrote " + out + " (3 steps, flow \"tasks\")\n"; stderr.String() != want {
		t.Fatalf("stderr %q, want %q", stderr.String(), want)
	}
	if b, err := os.ReadFile(out); err != nil || !strings.Contains(string(b), "tasks:") {
		t.Fatalf("written: %v\n%s", err, b)
	}
	status, err = CompileTo(filepath.Join(t.TempDir(), "none"), "", "", testCompile, &stdout, &stderr)
	if status != statusInvalid || err == nil || !strings.HasPrefix(err.Error(), "directory_not_found: ") {
		t.Fatalf("missing dir: %d, %v", status, err)
	}
}
