package specs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// The bodies of `stratum validate` and `stratum compile` (migrate's is
// MigrateFile). Each answers with (exit status, error): the status, and
// the message the command prints with it; status 0 with an error is a
// failure to write the output.

// The exit statuses of validate and compile.
const (
	statusInvalid = 1 // a spec is invalid, or a file cannot be read or written
	statusUsage   = 2 // a usage problem: a bad flag, a path that is missing or holds no spec
)

// ValidateLine is `stratum validate`'s command line.
type ValidateLine struct {
	Paths     []string // FILE|DIR arguments
	Format    string   // --format
	FormatSet bool     // --format was given
	JSON      bool     // --json
	GitHub    bool     // the process runs under GitHub Actions
}

// Check returns the output format the line asks for (ChooseFormat); the
// error is a usage problem: no path, or formats that disagree.
func (l ValidateLine) Check() (format string, err error) {
	if len(l.Paths) == 0 {
		return "", errors.New("validate needs at least one FILE or DIR")
	}
	return ChooseFormat(l.Format, l.FormatSet, l.JSON, l.GitHub)
}

// ValidatePaths is `stratum validate PATH...` (without --watch): the spec
// files the paths name (CollectSpecFiles) checked (ValidateFiles) and
// written to w in format (WriteResults); exit 1 when one is invalid.
func ValidatePaths(paths []string, format string, strict bool, compile ExprCompiler, w io.Writer) (status int, err error) {
	files, err := CollectSpecFiles(paths)
	if err != nil {
		return PathsStatus(err)
	}
	results, valid := ValidateFiles(files, strict, compile)
	if err := WriteResults(w, format, results); err != nil {
		return 0, err
	}
	if !valid {
		return statusInvalid, nil
	}
	return 0, nil
}

// PathsStatus is the exit status of validating paths (also with --watch)
// that ended with err: a path that is missing or holds no spec is a usage
// problem (2), anything else exit 1, nil 0.
func PathsStatus(err error) (int, error) {
	switch {
	case err == nil:
		return 0, nil
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrNoSpecFiles):
		return statusUsage, err
	}
	return statusInvalid, err
}

// CompileTo is `stratum compile TASKS_DIR`: the tasks compiled
// (CompileTasks) into flow flowName, written to stdout, or to the file
// output (then a line on stderr says so). Every error is exit 1.
func CompileTo(dir, flowName, output string, compile ExprCompiler, stdout, stderr io.Writer) (status int, err error) {
	c, err := CompileTasks(dir, flowName, compile)
	var ce *CompileError
	if errors.As(err, &ce) {
		return statusInvalid, fmt.Errorf("%s: %s", ce.Type, ce.Message)
	}
	if err != nil {
		return statusInvalid, err
	}
	if output == "" || output == "-" {
		_, err := io.WriteString(stdout, c.YAML)
		return 0, err
	}
	if err := os.WriteFile(output, []byte(c.YAML), 0o644); err != nil {
		return statusInvalid, err
	}
	fmt.Fprintf(stderr, "wrote %s (%d steps, flow %q)\n", output, len(c.Steps), c.FlowName)
	return 0, nil
}
