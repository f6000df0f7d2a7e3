package run

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestShellSubstitute runs the substituted text with sh -c: every value,
// hostile ones included, reaches printf as exactly one argument's data in
// each quoting context, and nothing it holds runs.
func TestShellSubstitute(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	values := []string{
		"plain/dir",
		"proj;touch PWNED",
		"$(touch PWNED)",
		"`touch PWNED`",
		"it's",
		`a"b\c`,
		"two  spaces",
		"{dir}",
		"x'; touch PWNED; echo '",
		`x"; touch PWNED; echo "`,
		"",
	}
	templates := []struct {
		name, text, prefix, suffix string
	}{
		{"plain", `printf '%s' {dir}`, "", ""},
		{"single", `printf '%s' '{dir}'`, "", ""},
		{"double", `printf '%s' "{dir}"`, "", ""},
		{"inside-double", `printf '%s' "<{dir}>"`, "<", ">"},
		{"inside-single", `printf '%s' '<{dir}>'`, "<", ">"},
		{"after-escaped-quote", `printf '%s' \'{dir}`, "'", ""},
		{"after-double-then-plain", `printf '%s' "a"{dir}`, "a", ""},
	}
	for _, tt := range templates {
		for _, v := range values {
			t.Run(tt.name+"/"+v, func(t *testing.T) {
				dir := t.TempDir()
				text := shellSubstitute(tt.text, map[string]string{"dir": v})
				cmd := exec.Command("sh", "-c", text)
				cmd.Dir = dir
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("sh -c %q: %v", text, err)
				}
				if want := tt.prefix + v + tt.suffix; string(out) != want {
					t.Errorf("sh -c %q printed %q, want %q", text, out, want)
				}
				if _, err := os.Stat(filepath.Join(dir, "PWNED")); err == nil {
					t.Errorf("sh -c %q ran the value's command", text)
				}
			})
		}
	}
}

// TestShellSubstituteLeavesOtherBraces: braces that are not placeholders
// (shell ${VAR}, JSON) are kept.
func TestShellSubstituteLeavesOtherBraces(t *testing.T) {
	got := shellSubstitute(`echo ${HOME} {"a": 1} {unknown} {dir}`, map[string]string{"dir": "d"})
	if want := `echo ${HOME} {"a": 1} {unknown} 'd'`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
