package run

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
)

// ModifiedFiles names the tracked files a turn changed, relative to the
// directory asked about; outside a repository it names none.
func TestModifiedFiles(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ctx := context.Background()
	repo := t.TempDir()
	sub := filepath.Join(repo, "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"top.txt", "sub/a.txt", "sub/b.txt"} {
		if err := os.WriteFile(filepath.Join(repo, f), []byte("one\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"commit", "-q", "-m", "base"}} {
		if _, err := git(ctx, repo, args...); err != nil {
			t.Fatal(err)
		}
	}
	if got := ModifiedFiles(ctx, repo); got != nil {
		t.Fatalf("a clean tree: %v", got)
	}
	for _, f := range []string{"top.txt", "sub/b.txt"} {
		if err := os.WriteFile(filepath.Join(repo, f), []byte("two\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := ModifiedFiles(ctx, repo); !reflect.DeepEqual(got, []string{"sub/b.txt", "top.txt"}) {
		t.Errorf("from the top: %v", got)
	}
	if got := ModifiedFiles(ctx, sub); !reflect.DeepEqual(got, []string{"b.txt"}) {
		t.Errorf("from sub: %v", got)
	}
	if got := ModifiedFiles(ctx, t.TempDir()); got != nil {
		t.Errorf("outside a repository: %v", got)
	}
	if got := ModifiedFiles(ctx, ""); got != nil {
		t.Errorf("no directory: %v", got)
	}
}
