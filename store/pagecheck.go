package store

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// bbolt's consistency check (Tx.Check) runs in a goroutine of its own, and
// on a damaged page it may read outside the file's mapping: a memory fault
// there is not a panic the store can recover (debug.SetPanicOnFault is per
// goroutine) but the end of the process. So the page check never runs in
// the process that asked for it: pageProblems copies the transaction's
// file (Tx.WriteTo reads it with read(2), not through the mapping) to a
// temporary file and checks the copy in a child process — this very
// executable, started with pageCheckEnv naming the copy, which the init
// below turns into a checker before anything else runs. The child prints
// each problem on a line and exits 0 (sound) or 1 (problems); a child that
// dies (the fault) means the pages are damaged too. It runs only when a
// file is not known to be as a stratum commit left it (verify.go) and for
// `stratum store check`, so its cost — the copy and a process start, tens
// of milliseconds at 10,000 flows — is rare.

// pageCheckEnv names the file a child started by pageProblems checks.
const pageCheckEnv = "STRATUM_INTERNAL_PAGE_CHECK"

func init() {
	if path := os.Getenv(pageCheckEnv); path != "" {
		os.Exit(runPageCheck(path))
	}
}

// runPageCheck is the child: bbolt's check of the file at path, one problem
// per line on stdout; 0 when sound, 1 when not, 2 when it cannot open it.
func runPageCheck(path string) int {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		fmt.Println(oneLine(err.Error()))
		return 2
	}
	defer db.Close()
	found := false
	_ = db.View(func(tx *bolt.Tx) error {
		for p := range tx.Check() {
			found = true
			fmt.Println(oneLine(p.Error()))
		}
		return nil
	})
	if found {
		return 1
	}
	return 0
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

// pageProblems checks the pages of the file as btx sees it, in a child
// process (above); it returns the problems found (none: sound) or err when
// the check itself could not run.
func (s *Store) pageProblems(btx *bolt.Tx) (problems []error, err error) {
	tmp, err := os.CreateTemp(filepath.Dir(s.path), ".stratum-check-*.db")
	if err != nil {
		tmp, err = os.CreateTemp("", "stratum-check-*.db")
	}
	if err != nil {
		return nil, fmt.Errorf("store %s: page check: %w", s.path, err)
	}
	defer os.Remove(tmp.Name())
	w := &copyWriter{f: tmp}
	if err := s.guard(func() error { _, err := btx.WriteTo(w); return err }); err != nil {
		_ = tmp.Close()
		if w.err != nil {
			// bbolt reports a failed write as text ("meta 0 copy: …"):
			// the copy's own error keeps its cause (a full disk).
			return nil, fmt.Errorf("store %s: page check: copying the file to %s: %w", s.path, tmp.Name(), w.err)
		}
		var fe *FileError
		if errors.As(err, &fe) {
			return []error{errors.New(fe.Detail)}, nil
		}
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("store %s: page check: %w", s.path, err)
	}
	problems, err = CheckFilePages(tmp.Name())
	if err != nil {
		return nil, fmt.Errorf("store %s: page check: %w", s.path, err)
	}
	return problems, nil
}

// copyWriter is the page check's copy, keeping its first write error.
type copyWriter struct {
	f   *os.File
	err error
}

func (w *copyWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil && w.err == nil {
		w.err = err
	}
	return n, err
}

// CheckFilePages runs bbolt's page check of the file at path in a child
// process (this executable: see pageCheckEnv) and returns the problems it
// found — none when the pages are sound; a file bbolt does not open, or a
// check that dies on a damaged page, is a problem too. err is a failure to
// run the check at all. Nothing may be writing the file meanwhile.
func CheckFilePages(path string) ([]error, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), pageCheckEnv+"="+path)
	var out bytes.Buffer
	cmd.Stdout = &out
	runErr := cmd.Run()
	var problems []error
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			problems = append(problems, errors.New(line))
		}
	}
	var ee *exec.ExitError
	switch {
	case runErr == nil:
		return problems, nil
	case errors.As(runErr, &ee) && ee.ExitCode() == 1:
		return problems, nil
	case errors.As(runErr, &ee) && ee.ExitCode() == 2:
		return append(problems, errors.New("the file does not open")), nil
	case errors.As(runErr, &ee):
		// Killed by the fault on a damaged page (or any other death).
		return append(problems, fmt.Errorf("the check stopped on a damaged page (%v)", ee)), nil
	}
	return nil, runErr
}
