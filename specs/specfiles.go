package specs

import (
	"io/fs"
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
