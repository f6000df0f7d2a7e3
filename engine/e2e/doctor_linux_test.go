package e2e

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestDoctorStoreNotWritable: `stratum doctor` run by a user who may not
// write the store fails the store check with its fix (make the file and
// its directory writable) and exits 1: a store this user may read opens
// and its write transaction fails; one this user may not read does not
// open. Root writes any file, so under root the binary runs as the user
// nobody (65534).
func TestDoctorStoreNotWritable(t *testing.T) {
	const fix = " — make the file and its directory writable by this user (ls -l), or point STRATUM_STORE at a store you can write"
	for _, c := range []struct {
		name   string
		dbMode os.FileMode
		want   []string // lines of the store check, in order
	}{
		{"readable", 0o444, []string{"ok   store: bbolt DB opens, schema ", "FAIL store: bbolt DB cannot take a write transaction: "}},
		{"unreadable", 0o000, []string{"FAIL store: bbolt DB does not open: "}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, home, bin := doctorHome(t)
			db := filepath.Join(home, "stratum.db")
			if err := os.Chmod(db, c.dbMode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(home, 0o555); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin, "doctor")
			cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "STRATUM_HOME=" + home, "NO_COLOR=1"}
			cmd.Dir = dir
			if os.Getuid() == 0 {
				cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
			}
			out, err := cmd.Output()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
				t.Fatalf("doctor on a store this user may not write: %v (want exit 1)\n%s", err, out)
			}
			var got []string
			for _, l := range strings.Split(string(out), "\n") {
				if strings.Contains(l, " store: ") {
					got = append(got, l)
				}
			}
			ok := len(got) == len(c.want)
			for i := 0; ok && i < len(got); i++ {
				ok = strings.HasPrefix(got[i], strings.Replace(c.want[i], "DB", db, 1))
			}
			if last := len(got) - 1; !ok || !strings.Contains(got[last], "permission denied") || !strings.HasSuffix(got[last], fix) {
				t.Fatalf("the store's lines:\n%s\nwant %q, the last one naming the permission and ending %q\n%s", strings.Join(got, "\n"), c.want, fix, out)
			}
		})
	}
}

// doctorHome is a directory any user may read (dir) holding a copy of the
// binary (bin) and a STRATUM_HOME (home) whose store its owner created.
func doctorHome(t *testing.T) (dir, home, bin string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "doctor-perm-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = filepath.Walk(dir, func(p string, _ os.FileInfo, _ error) error { return os.Chmod(p, 0o755) })
		os.RemoveAll(dir)
	})
	home = filepath.Join(dir, "home")
	setup := exec.Command(filepath.Join(binDir, "stratum"), "doctor")
	setup.Env = append(os.Environ(), "STRATUM_HOME="+home, "NO_COLOR=1")
	setup.Dir = dir
	if out, _ := setup.Output(); !strings.Contains(string(out), "ok   store: a write transaction starts") {
		t.Fatalf("the owner's doctor:\n%s", out)
	}
	bin = filepath.Join(dir, "stratum")
	in, err := os.Open(filepath.Join(binDir, "stratum"))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, home, bin
}
