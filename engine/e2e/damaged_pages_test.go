package e2e

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/specs/exprlang"
	"github.com/stratum-go/stratum/store"
)

// TestZeroedPageRefusedByWriters: a page of a copy of a real store file
// zeroed while no stratum process runs. Every command that writes (plan,
// step-done, gate) refuses with the corrupt-file message and exit 1, and
// the file stays byte-identical; `store check` reports it (exit 1); reading
// commands answer or refuse with the same message.
func TestZeroedPageRefusedByWriters(t *testing.T) {
	src := t.TempDir()
	st, err := store.Open(filepath.Join(src, store.FileName), store.Options{KeepOpen: -1})
	if err != nil {
		t.Fatal(err)
	}
	svc := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: st}
	ctx := context.Background()
	var ids []string
	for i := 0; i < 200; i++ {
		out, err := svc.Plan(ctx, deadlineSpec, "main", nil, engine.PlanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, engine.FlowIDOf(out))
	}
	gated := ids[0]
	if _, err := svc.StepDone(ctx, engine.StepReport{FlowID: gated, StepID: "work", Result: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(src, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	// Copies, each with one leaf or branch page zeroed (pages found with
	// bbolt itself; only those bbolt's check then reports count).
	home := t.TempDir()
	path := filepath.Join(home, store.FileName)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	var pages []int
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, PreLoadFreelist: true, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_ = db.View(func(tx *bolt.Tx) error {
		for id := 2; id < len(data)/4096; id++ {
			if pi, err := tx.Page(id); err == nil && pi != nil && (pi.Type == "leaf" || pi.Type == "branch") {
				pages = append(pages, id)
			}
		}
		return nil
	})
	_ = db.Close()
	specFile := filepath.Join(t.TempDir(), "gate.stratum.yaml")
	if err := os.WriteFile(specFile, []byte(deadlineSpec), 0o600); err != nil {
		t.Fatal(err)
	}
	e := &cliEnv{t: t, home: home}
	pristine := data
	damaged := 0
	for _, page := range pages {
		data = bytes.Clone(pristine)
		clear(data[page*4096 : (page+1)*4096])
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if !checkFails(t, path) {
			continue
		}
		damaged++
		code, _, stderr := e.run("", "plan", specFile)
		after, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if code != 1 || !strings.Contains(stderr, "store file is corrupt") || !bytes.Equal(after, data) {
			t.Fatalf("plan on a store with page %d zeroed: exit %d (want 1), file unchanged %v\n%s",
				page, code, bytes.Equal(after, data), stderr)
		}
	}
	if damaged < 3 {
		t.Fatalf("only %d of %d zeroed pages were damage bbolt's check sees", damaged, len(pages))
	}
	t.Logf("%d of %d zeroed pages are damage bbolt's check sees; plan refused each", damaged, len(pages))
	// The last damaged copy, for every other command.
	for _, args := range [][]string{
		{"plan", specFile},
		{"step-done", ids[1], "work", "--result", "{}"},
		{"gate", "approve", gated, "review", "--resolved-by", "agent", "--note", "fine"},
		{"store", "check"},
	} {
		code, stdout, stderr := e.run("", args...)
		// store check reports the pages, unless the file cannot even be
		// opened (the damage is on the path every read takes).
		ok := strings.Contains(stderr, "store file is corrupt") || args[0] == "store" && strings.Contains(stdout, ": damaged\npage: ")
		if code != 1 || !ok {
			t.Errorf("stratum %s on a zeroed page: exit %d, want 1 with the corrupt-file message\n%s\n%s",
				strings.Join(args, " "), code, stdout, stderr)
		}
		if args[0] != "store" && !strings.Contains(stderr, "the file was left untouched") {
			t.Errorf("stratum %s: %s", strings.Join(args, " "), stderr)
		}
		after, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(after, data) {
			t.Fatalf("stratum %s changed the damaged file", strings.Join(args, " "))
		}
	}
	// Reading commands read what they need: one that meets the damaged
	// page refuses with the same message, one that does not answers.
	for _, args := range [][]string{{"query", "flows"}, {"query", "gates"}, {"query", "flow", gated}, {"tui", "--plain", "--once"}} {
		code, stdout, stderr := e.run("", args...)
		if code != 0 && (code != 1 || !strings.Contains(stderr, "store file is corrupt")) {
			t.Errorf("stratum %s: exit %d\n%s\n%s", strings.Join(args, " "), code, stdout, stderr)
		}
		t.Logf("stratum %s on a zeroed page: exit %d %s", strings.Join(args, " "), code, strings.TrimSpace(stderr))
	}
}

// checkFails reports whether bbolt's own check finds damage (run in a
// child process by store.CheckFilePages: on a damaged page the check can
// fault); a file it cannot open counts.
func checkFails(t *testing.T, path string) bool {
	t.Helper()
	problems, err := store.CheckFilePages(path)
	if err != nil {
		t.Fatal(err)
	}
	return len(problems) > 0
}
