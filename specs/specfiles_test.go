package specs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestFindSpecFiles(t *testing.T) {
	root := filepath.Join(t.TempDir(), ".root") // a hidden start directory is still searched
	for _, p := range []string{
		"b.stratum.yaml",
		"a/x.stratum.yaml",
		"a-b/x.stratum.yaml", // sorts before a/… by full path
		"a/deep/er/y.stratum.yaml",
		".hidden-file.stratum.yaml", // hidden files are specs here (the watcher leaves them out)
		"dir.stratum.yaml/z.stratum.yaml",
		"notes.txt", "flow.yaml", "x.stratum.yml", "x.stratum.yaml.swp",
		".git/c.stratum.yaml", ".cache/d.stratum.yaml", "node_modules/e.stratum.yaml", "a/node_modules/f.stratum.yaml",
	} {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	linked := false
	if err := os.Symlink(filepath.Join(root, "a"), filepath.Join(root, "link")); err == nil {
		linked = true // a symlink to a directory is not followed
	}
	got, err := FindSpecFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, p := range []string{
		".hidden-file.stratum.yaml", "a-b/x.stratum.yaml", "a/deep/er/y.stratum.yaml", "a/x.stratum.yaml",
		"b.stratum.yaml", "dir.stratum.yaml/z.stratum.yaml",
	} {
		want = append(want, filepath.Join(root, p))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("linked=%v\ngot  %q\nwant %q", linked, got, want)
	}

	if _, err := FindSpecFiles(filepath.Join(root, "missing")); !os.IsNotExist(err) {
		t.Fatalf("missing directory: %v", err)
	}
	if files, err := FindSpecFiles(filepath.Join(root, "node_modules")); err != nil || len(files) != 1 {
		t.Fatalf("node_modules as the start directory: %q, %v", files, err)
	}
}

func TestSpecNames(t *testing.T) {
	for name, want := range map[string]bool{
		"flow.stratum.yaml": true, ".flow.stratum.yaml": true, ".stratum.yaml": true,
		"flow.stratum.yml": false, "flow.yaml": false, "flow.stratum.yaml.swp": false, "flow.STRATUM.yaml": false,
	} {
		if IsSpecName(name) != want {
			t.Errorf("IsSpecName(%q) = %v", name, !want)
		}
	}
	for name, want := range map[string]bool{
		".git": true, ".cache": true, ".": true, "node_modules": true, "src": false, "node_modules2": false,
	} {
		if IsSkippedDir(name) != want {
			t.Errorf("IsSkippedDir(%q) = %v", name, !want)
		}
	}
}

func TestCollectSpecFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("sub/good.stratum.yaml", "version: \"0.2\"\nflows:\n  main:\n    input: {}\n    steps:\n      - {id: a, intent: \"x\"}\n")
	bad := write("sub/bad.stratum.yaml", "version: 0.2\n")
	explicit := write("other.yaml", "version: \"0.2\"\nflows:\n  main:\n    input: {}\n    steps:\n      - {id: a, intent: \"x\"}\n")

	// A file is taken as given, a directory searched; duplicates dropped.
	got, err := CollectSpecFiles([]string{explicit, filepath.Join(dir, "sub"), good})
	if err != nil || !slices.Equal(got, []string{explicit, bad, good}) {
		t.Fatalf("got %q %v", got, err)
	}
	results, valid := ValidateFiles(got, false, testCompile)
	if valid || len(results) != 3 || !results[0].Valid || results[1].Valid || !results[2].Valid {
		t.Fatalf("validation: %v %+v", valid, results)
	}
	if _, err := CollectSpecFiles([]string{filepath.Join(dir, "nope")}); !errors.Is(err, fs.ErrNotExist) || err.Error() != filepath.Join(dir, "nope")+": no such file or directory" {
		t.Fatalf("missing path: %v", err)
	}
	empty := t.TempDir()
	if _, err := CollectSpecFiles([]string{empty}); !errors.Is(err, ErrNoSpecFiles) {
		t.Fatalf("no spec files: %v", err)
	}
}
