package py

import (
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// MaxFileBytes is the largest file file_contains reads (as in the original);
// a larger file contains nothing.
const MaxFileBytes = 10 << 20

// FSRoot is a root of the file functions that is not a directory: their
// paths name files of FS (cleaned, slash-separated; a path that is empty,
// absolute or leaves FS's top is false). FS is trusted to keep its names
// inside itself: symlinks are FS's business (os.DirFS follows them out,
// os.Root.FS does not).
type FSRoot struct{ FS fs.FS }

// fileExists is file_exists(path): a regular file inside the root.
// Arguments: path, root.
func fileExists(w *Work, a []any) (any, error) {
	p, err := pathArg("file_exists", a[0])
	if err != nil {
		return nil, err
	}
	if r, ok := a[1].(FSRoot); ok {
		name, ok := fsName(p)
		if !ok || r.FS == nil {
			return false, nil
		}
		st, err := fs.Stat(r.FS, name)
		return err == nil && st.Mode().IsRegular(), nil
	}
	root, _ := a[1].(string)
	real, ok := confinedPath(p, root)
	if !ok {
		return false, nil
	}
	st, err := os.Stat(real)
	return err == nil && st.Mode().IsRegular(), nil
}

// fileContains is file_contains(path, text): a regular file inside the root,
// at most MaxFileBytes long, whose text (invalid UTF-8 read as U+FFFD)
// contains text. Arguments: path, text, root.
func fileContains(w *Work, a []any) (any, error) {
	p, err := pathArg("file_contains", a[0])
	if err != nil {
		return nil, err
	}
	sub, ok := a[1].(string)
	if !ok {
		return nil, Errorf("file_contains() argument 2 must be str, not %s", typeName(a[1]))
	}
	f := openConfined(p, a[2])
	if f == nil {
		return false, nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() > MaxFileBytes {
		return false, nil
	}
	// Reading counts against the evaluation's budget like any other data
	// (about 6 files of the maximum size per evaluation).
	if err := w.spendBytes(int(st.Size()) + len(sub)); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil || len(data) > MaxFileBytes {
		return false, nil
	}
	text := string(data)
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	return strings.Contains(text, sub), nil
}

func pathArg(fn string, v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", Errorf("%s() argument must be str, not %s", fn, typeName(v))
	}
	return s, nil
}

// confinedPath resolves p against root and returns the symlink-free path, or
// ok=false when p is empty, escapes the root (lexically or through a
// symlink) or cannot be resolved.
func confinedPath(p, root string) (string, bool) {
	if p == "" || strings.ContainsRune(p, 0) {
		return "", false
	}
	if root == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", false
		}
		root = wd
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return "", false
	}
	realRoot, err := filepath.EvalSymlinks(absRoot)
	if err != nil {
		return "", false
	}
	full := p
	if !filepath.IsAbs(p) {
		full = filepath.Join(absRoot, p)
	}
	full = filepath.Clean(full)
	// Lexical check against both the root as given and its real path, so an
	// absolute path written through either spelling is accepted.
	if !within(absRoot, full) && !within(realRoot, full) {
		return "", false
	}
	real, err := filepath.EvalSymlinks(full)
	if err != nil {
		return "", false
	}
	if !within(realRoot, real) {
		return "", false
	}
	return real, true
}

// within reports whether p is root or inside it (both clean and absolute).
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return false
	}
	return rel == "." || (rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel))
}

// fsName is p as a name of an FSRoot: cleaned and slash-separated;
// ok=false when p is empty, absolute or leaves the root.
func fsName(p string) (string, bool) {
	if p == "" || strings.ContainsRune(p, 0) || filepath.IsAbs(p) || path.IsAbs(filepath.ToSlash(p)) {
		return "", false
	}
	name := path.Clean(filepath.ToSlash(p))
	if name == ".." || strings.HasPrefix(name, "../") || !fs.ValidPath(name) {
		return "", false
	}
	return name, true
}

// openConfined returns p opened if it is a regular file inside root (a
// directory, "" = the working directory, or an FSRoot), or nil.
func openConfined(p string, root any) fs.File {
	if r, ok := root.(FSRoot); ok {
		return openFS(p, r.FS)
	}
	dir, _ := root.(string)
	real, ok := confinedPath(p, dir)
	if !ok {
		return nil
	}
	st, err := os.Lstat(real)
	if err != nil || !st.Mode().IsRegular() {
		return nil
	}
	f, err := os.Open(real)
	if err != nil {
		return nil
	}
	st, err = f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil
	}
	return f
}

// openFS is openConfined for an FSRoot.
func openFS(p string, fsys fs.FS) fs.File {
	name, ok := fsName(p)
	if !ok || fsys == nil {
		return nil
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil
	}
	return f
}

// ConfinedPath is the rule file_exists and file_contains confine their
// paths by: p resolved against root (the working directory when "") to its
// symlink-free path, ok=false when it is empty, escapes root (lexically or
// through a symlink) or cannot be resolved. Other server-read evidence
// (the guard's server_file_exists) uses it too.
func ConfinedPath(p, root string) (string, bool) { return confinedPath(p, root) }
