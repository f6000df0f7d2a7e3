package run

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// git runs git in dir with hooks disabled and a fixed identity (the commits
// and merges of a fan-out are stratum's), returning trimmed stdout; the
// error carries stderr.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	full := append([]string{"-c", "core.hooksPath=/dev/null", "-c", "user.name=stratum", "-c", "user.email=stratum@localhost",
		"-c", "commit.gpgsign=false"}, args...)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = strings.TrimSpace(out.String())
		}
		return strings.TrimSpace(out.String()), fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, clip(msg, 600))
	}
	return strings.TrimSpace(out.String()), nil
}

// ModifiedFiles lists the tracked files changed in dir's work tree
// (`git diff --name-only`), as the original's goal loop collects a worker
// turn's files — here relative to dir and only those under it
// (--relative), so the judge reads them where it stages them from. None
// when dir is empty, not in a repository, or git takes over 5 s.
func ModifiedFiles(ctx context.Context, dir string) []string {
	if dir == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := git(ctx, dir, "diff", "--name-only", "--relative")
	if err != nil {
		return nil
	}
	return lines(out)
}

// lines splits git output into non-empty lines.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// repoRoot is the top of the git repository holding dir.
func repoRoot(ctx context.Context, dir string) (string, error) {
	root, err := git(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", err
	}
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	return root, nil
}

// dirtyFiles lists the uncommitted changes of a repository (tracked and
// untracked, ignored files excepted).
func dirtyFiles(ctx context.Context, root string) ([]string, error) {
	out, err := git(ctx, root, "status", "--porcelain", "--untracked-files=normal")
	if err != nil {
		return nil, err
	}
	var files []string
	for _, l := range lines(out) {
		if len(l) > 3 {
			files = append(files, strings.TrimSpace(l[2:]))
		}
	}
	return files, nil
}

// ownedBy reports whether a changed file (repository-relative, slash
// separated) is covered by files_owned: an exact path, a glob (path.Match),
// or a directory ("dir/" or "dir" covering what is below it).
func ownedBy(file string, owned []string) bool {
	for _, o := range owned {
		o = strings.TrimPrefix(filepath.ToSlash(o), "./")
		switch {
		case o == file:
			return true
		case strings.HasSuffix(o, "/") && strings.HasPrefix(file, o):
			return true
		case strings.HasPrefix(file, o+"/"):
			return true
		}
		if ok, _ := path.Match(o, file); ok {
			return true
		}
	}
	return false
}

// outside lists the files not covered by files_owned.
func outside(files, owned []string) []string {
	var out []string
	for _, f := range files {
		if !ownedBy(f, owned) {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}

// listShort joins at most n items, saying how many more there are.
func listShort(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + fmt.Sprintf(" and %d more", len(items)-n)
}
