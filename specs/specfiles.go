package specs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// SpecSuffix is the file-name suffix of a Stratum spec.
const SpecSuffix = ".stratum.yaml"

// IsSpecName reports whether a file's base name marks it as a spec: it ends
// in SpecSuffix.
func IsSpecName(name string) bool { return strings.HasSuffix(name, SpecSuffix) }

// IsSkippedDir reports whether spec discovery skips a subdirectory with this
// base name: a hidden one (a leading ".", which covers .git) or
// node_modules.
func IsSkippedDir(name string) bool {
	return strings.HasPrefix(name, ".") || name == "node_modules"
}

// FindSpecFiles returns the spec files under dir, sorted: every entry that is
// not a directory and whose name passes IsSpecName, found by searching dir
// recursively except for the subdirectories IsSkippedDir names (dir itself is
// searched whatever its name). Paths start with dir as given. The error is
// the first one met while walking (dir missing or unreadable, a subdirectory
// that cannot be read); symlinks are not followed.
func FindSpecFiles(dir string) ([]string, error) {
	var found []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != dir && IsSkippedDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if IsSpecName(d.Name()) {
			found = append(found, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(found)
	return found, nil
}

// ErrNoSpecFiles: the paths name no spec file.
var ErrNoSpecFiles = errors.New("no *.stratum.yaml files found")

// CollectSpecFiles expands paths as `stratum validate` takes them: a file is
// taken as given, a directory is searched with FindSpecFiles; duplicates are
// dropped, order kept. A path that does not exist is an error wrapping
// fs.ErrNotExist; no spec file at all is ErrNoSpecFiles.
func CollectSpecFiles(paths []string) ([]string, error) {
	var files []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			files = append(files, p)
		}
	}
	for _, arg := range paths {
		info, err := os.Stat(arg)
		if err != nil {
			return nil, missingPath(arg)
		}
		if !info.IsDir() {
			add(arg)
			continue
		}
		found, err := FindSpecFiles(arg)
		if err != nil {
			return nil, err
		}
		for _, f := range found {
			add(f)
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%w in %s", ErrNoSpecFiles, strings.Join(paths, " "))
	}
	return files, nil
}

// missingPath is a path that does not exist; it matches fs.ErrNotExist.
type missingPath string

func (p missingPath) Error() string        { return string(p) + ": no such file or directory" }
func (p missingPath) Is(target error) bool { return target == fs.ErrNotExist }

// ValidateFiles parses and checks every file and reports whether all are
// valid. strict counts warnings as errors (`stratum validate --strict`): a
// file with a warning is not valid. compile compiles the expressions (see
// Parse).
func ValidateFiles(files []string, strict bool, compile ExprCompiler) ([]FileResult, bool) {
	results := make([]FileResult, 0, len(files))
	valid := true
	for _, f := range files {
		_, ds := ParseFile(f, compile)
		r := NewFileResult(f, ds)
		if strict && len(ds) > 0 {
			r.Valid = false
		}
		valid = valid && r.Valid
		results = append(results, r)
	}
	return results, valid
}
