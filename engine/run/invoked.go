package run

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Commands stratum prints as next steps (stratum gate approve …, stratum
// run --resume …) must run where the user reads them. A newcomer who
// followed the quick start with `go run .` has no stratum on PATH, and the
// binary go run built is gone once it exits: Invocation says how to run
// this stratum again.

// ModulePath is stratum's module path: what `go run MODULE@latest` fetches
// and the module line a checkout's go.mod holds.
const ModulePath = "github.com/stratum-go/stratum"

// Invoked is where the running binary is and what it can see.
type Invoked struct {
	Executable string // the running binary, its symbolic links resolved
	Getenv     func(string) string
	LookPath   func(string) (string, error)
	Getwd      func() (string, error)
}

// InvokedNow is this process.
func InvokedNow() Invoked {
	exe, err := os.Executable()
	if err == nil {
		if r, err := filepath.EvalSymlinks(exe); err == nil {
			exe = r
		}
	}
	return Invoked{Executable: exe, Getenv: os.Getenv, LookPath: exec.LookPath, Getwd: os.Getwd}
}

// Invocation is the command that runs this stratum again, to print before
// a next step's arguments:
//
//   - "stratum" when that name on PATH is this binary;
//   - for a temporary `go run` build (TemporaryBuild): "go run ." from the
//     checkout this directory is in ("go run ../.." from below its root),
//     else "go run github.com/stratum-go/stratum@latest";
//   - else this binary's path (a build outside PATH: ./stratum, /tmp/x/stratum).
func (iv Invoked) Invocation() string {
	if iv.Executable == "" {
		return "stratum"
	}
	if TemporaryBuild(iv.Executable, iv.Getenv("GOCACHE")) {
		return "go run " + iv.checkout()
	}
	if p, err := iv.LookPath("stratum"); err == nil && sameFile(p, iv.Executable) {
		return "stratum"
	}
	return shellWord(iv.Executable)
}

// checkout is the package argument of `go run` for this stratum: the
// directory (relative to the working one) of the checkout the working
// directory is in, or the module at its latest version.
func (iv Invoked) checkout() string {
	wd, err := iv.Getwd()
	if err != nil {
		return ModulePath + "@latest"
	}
	for d := wd; ; d = filepath.Dir(d) {
		if moduleOf(filepath.Join(d, "go.mod")) == ModulePath {
			rel, err := filepath.Rel(wd, d)
			if err != nil {
				return shellWord(d)
			}
			if rel == "." {
				return "."
			}
			return shellWord(rel)
		}
		if filepath.Dir(d) == d {
			return ModulePath + "@latest"
		}
	}
}

// moduleOf is the module line of a go.mod file ("" when unreadable).
func moduleOf(gomod string) string {
	f, err := os.Open(gomod)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// cmd is a next-step command of stratum with args, as this stratum is run
// (Options.Invocation).
func (r *Runner) cmd(args string) string {
	inv := r.opts.Invocation
	if inv == "" {
		inv = "stratum"
	}
	return inv + " " + args
}

// resumable is the note of an error that leaves fc's flow resumable: the
// command that continues it.
func (r *Runner) resumable(fc *flowCtx) string {
	return "the flow stays resumable: " + r.cmd("run --resume "+rootID(fc))
}

// TemporaryBuild reports whether the binary at path is a temporary build
// of the go command (`go run`, `go test`): it lies in a go-build directory
// (the work directory $TMPDIR/go-build<digits>, or the default build cache
// ~/.cache/go-build, where go run caches executables) or under gocache
// (a $GOCACHE set elsewhere).
func TemporaryBuild(path, gocache string) bool {
	clean := filepath.Clean(path)
	for _, el := range strings.Split(filepath.ToSlash(clean), "/") {
		if rest, ok := strings.CutPrefix(el, "go-build"); ok && strings.Trim(rest, "0123456789") == "" {
			return true // go-build (the cache) or go-build<digits> (a work directory)
		}
	}
	if gocache != "" && gocache != "off" {
		if rel, err := filepath.Rel(filepath.Clean(gocache), clean); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

func sameFile(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

// shellWord quotes s for a shell when it holds anything but the
// characters of plain paths.
func shellWord(s string) string {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:@,=", r)) {
			return quoteSingle(s)
		}
	}
	return s
}
