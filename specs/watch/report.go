package watch

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/stratum-go/stratum/specs"
)

// Report is `stratum validate --watch`: it watches the directories of paths
// (a file's own directory, reporting only that file) and writes a result in
// format (specs.Format*) to out every time a spec is saved or removed,
// until ctx ends. Progress goes to log.
func Report(ctx context.Context, paths []string, format string, out, log io.Writer) error {
	var dirs []string
	only := map[string]bool{} // explicit files: report only those
	for _, arg := range paths {
		info, err := os.Stat(arg)
		if err != nil {
			return fmt.Errorf("%s: %w", arg, fs.ErrNotExist)
		}
		abs, err := filepath.Abs(arg)
		if err != nil {
			return err
		}
		if info.IsDir() {
			dirs = append(dirs, abs)
			continue
		}
		dirs = append(dirs, filepath.Dir(abs))
		only[abs] = true
	}
	w, err := New(dirs, DefaultOptions())
	if err != nil {
		return err
	}
	defer w.Close()
	fmt.Fprintf(log, "watching %s for *%s changes (Ctrl-C to stop)\n", strings.Join(dirs, ", "), specs.SpecSuffix)
	for {
		select {
		case <-ctx.Done():
			return nil
		case u, ok := <-w.Updates():
			if !ok {
				return nil
			}
			if len(only) > 0 && !only[u.Path] {
				continue
			}
			name := relPath(u.Path)
			if u.Removed {
				if format == specs.FormatJSON {
					_ = json.NewEncoder(out).Encode(map[string]any{"file": name, "removed": true, "generation": u.Gen})
				} else {
					fmt.Fprintf(out, "%s: removed\n", name)
				}
				continue
			}
			ds := make(specs.Diagnostics, len(u.Diags))
			for i, d := range u.Diags {
				d.File = name
				ds[i] = d
			}
			if err := specs.WriteResults(out, format, []specs.FileResult{specs.NewFileResult(name, ds)}); err != nil {
				return err
			}
		}
	}
}

// relPath shortens an absolute path relative to the working directory when
// it is below it.
func relPath(p string) string {
	wd, err := os.Getwd()
	if err != nil {
		return p
	}
	if r, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return p
}
