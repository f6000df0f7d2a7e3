package backend

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/store"
	"github.com/stratum-go/stratum/store/shared"
)

// Probe: a store that opens and takes a write transaction; a read-only
// file refuses the write (nothing written either way); a file that is not
// a store does not open.
func TestProbe(t *testing.T) {
	home := t.TempDir()
	s := shared.Settings{Home: home}
	r := Probe(context.Background(), s)
	if r.Open != nil || r.Read != nil || r.Write != nil || !r.WriteProbed || r.Schema != store.SchemaVersion {
		t.Fatalf("a fresh store: %+v", r)
	}
	other := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(other, []byte(strings.Repeat("not a store\n", 500)), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := Probe(context.Background(), shared.Settings{Store: other}); r.Open == nil {
		t.Fatalf("a file that is not a store opened: %+v", r)
	}
	if os.Getuid() == 0 {
		return // root writes read-only files
	}
	db := filepath.Join(home, store.FileName)
	before, _ := os.ReadFile(db)
	if err := os.Chmod(db, 0o444); err != nil {
		t.Fatal(err)
	}
	r = Probe(context.Background(), s)
	if r.Open != nil && r.Write == nil {
		t.Logf("a read-only file does not open: %v", r.Open)
	} else if r.Write == nil {
		t.Fatalf("a read-only file: the write probe passed: %+v", r)
	}
	after, _ := os.ReadFile(db)
	if string(before) != string(after) {
		t.Error("the probe changed the file")
	}
}
