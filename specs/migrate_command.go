package specs

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// The exit statuses of `stratum migrate` (MigrateFile), the original's.
const (
	MigrateFailed   = 1 // the spec does not validate, or a file cannot be read or written
	MigrateDeclined = 2 // the answer to "Apply?" was not y
	MigrateVersion  = 3 // an unknown version, or no migration to the target
)

// MigrateOptions are `stratum migrate`'s flags.
type MigrateOptions struct {
	To     string // --to: the target version ("" = LatestMigration)
	Output string // --output: write here instead of over the file
	Yes    bool   // --yes: write without asking
	DryRun bool   // --dry-run: print the diff, write nothing
	Force  bool   // --force: let Output overwrite an existing file
	Backup bool   // --backup: keep FILE.bak when writing over the file
	JSON   bool   // --json: answer with a MigrateReport instead of asking
}

// MigrateReport is `stratum migrate --json`'s answer (its fields in the
// order of the original's sorted keys).
type MigrateReport struct {
	Diff       string   `json:"diff"`
	File       string   `json:"file"`
	From       string   `json:"from"`
	Output     string   `json:"output"`
	To         string   `json:"to"`
	Transforms []string `json:"transforms"`
	Written    bool     `json:"written"`
}

// MigrateFile is `stratum migrate FILE`: it migrates the file (Migrate),
// shows the diff and asks on out, reading the answer from in, then writes
// the result atomically. With o.JSON it asks nothing, writes only with
// o.Yes and returns the *MigrateReport for the caller to print; otherwise
// the report is nil and everything is said on out. status is the exit
// status (0, or one of the Migrate* constants); err, when set, is the
// message to print with it (nil for a declined answer); with status 0 it
// is a failure to write the diff of a dry run. compile compiles the
// expressions (see Parse).
func MigrateFile(file string, o MigrateOptions, compile ExprCompiler, in io.Reader, out io.Writer) (report any, status int, err error) {
	target := file
	if o.Output != "" {
		target = o.Output
		if _, err := os.Stat(target); err == nil && !o.Force && !o.DryRun {
			return nil, MigrateFailed, fmt.Errorf("refusing to overwrite %s without --force", target)
		}
	}
	src, err := os.ReadFile(file)
	if err != nil {
		return nil, MigrateFailed, fmt.Errorf("cannot read: %s: %w", file, err)
	}
	m, err := Migrate(file, src, o.To, compile)
	var ds Diagnostics
	switch {
	case errors.Is(err, ErrUnknownVersion), errors.Is(err, ErrNoTransformPath):
		return nil, MigrateVersion, err
	case errors.As(err, &ds):
		return nil, MigrateFailed, fmt.Errorf("source spec fails validation:\n%s", ds.Error())
	case err != nil:
		return nil, MigrateFailed, err
	}
	write := len(m.Transforms) > 0 && !o.DryRun
	if o.JSON {
		write = write && o.Yes
	} else if done, status, err := m.ask(file, o, in, out); done {
		return nil, status, err
	}
	if write {
		if err := writeMigrated(file, target, m.Output, o.Backup && o.Output == ""); err != nil {
			return nil, MigrateFailed, err
		}
	}
	if o.JSON {
		transforms := m.Transforms
		if transforms == nil {
			transforms = []string{}
		}
		return &MigrateReport{File: file, Output: target, From: m.From, To: m.To, Transforms: transforms, Diff: m.Diff, Written: write}, 0, nil
	}
	fmt.Fprintln(out, "Written.")
	return nil, 0, nil
}

// ask is MigrateFile's conversation without --json: done when nothing is
// to be written (already at the target, a dry run, a declined answer).
func (m *Migration) ask(file string, o MigrateOptions, in io.Reader, out io.Writer) (done bool, status int, err error) {
	if len(m.Transforms) == 0 {
		fmt.Fprintf(out, "already at v%s\n", m.To)
		return true, 0, nil
	}
	if o.DryRun {
		_, err := io.WriteString(out, m.Diff)
		return true, 0, err
	}
	if o.Yes {
		return false, 0, nil
	}
	s := "s"
	if len(m.Transforms) == 1 {
		s = ""
	}
	fmt.Fprintf(out, "Migrating %s: v%s -> v%s (%d transform%s)\n%sApply? [y/N]: ", file, m.From, m.To, len(m.Transforms), s, m.Diff)
	line, _ := bufio.NewReader(in).ReadString('\n')
	if strings.ToLower(strings.TrimSpace(line)) != "y" {
		return true, MigrateDeclined, nil
	}
	return false, 0, nil
}

// writeMigrated writes the migrated spec atomically (a temporary file in
// the same directory, synced, renamed), keeping FILE.bak first when asked.
func writeMigrated(file, target string, data []byte, backup bool) error {
	if backup {
		old, err := os.ReadFile(file)
		if err != nil {
			return fmt.Errorf("cannot write: %s.bak: %w", file, err)
		}
		if err := os.WriteFile(file+".bak", old, 0o644); err != nil {
			return fmt.Errorf("cannot write: %s.bak: %w", file, err)
		}
	}
	mode := os.FileMode(0o644)
	if st, err := os.Stat(file); err == nil {
		mode = st.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(target), ".stratum-migrate-*")
	if err != nil {
		return fmt.Errorf("cannot write: %s: %w", target, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), mode)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), target)
	}
	if err != nil {
		return fmt.Errorf("cannot write: %s: %w", target, err)
	}
	return nil
}
