package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/specs/exprlang"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/store"
)

const deadlineSpec = `version: "0.2"
functions:
  review:
    mode: gate
    timeout: 60
flows:
  main:
    input: {}
    steps:
      - id: work
        intent: "work"
      - id: review
        function: review
        depends_on: [work]
        on_approve: ~
        on_revise: work
        on_kill: ~
`

// TestDamagedFlowRecord: garbage in one flow's stored state, the flow's
// summary saying it waits at a gate whose deadline passed (so every
// command's sweep reaches it). Every command still works and reports the
// damaged id once on stderr; `gc --damaged` quarantines it, after which
// nothing is reported and the store checks clean.
func TestDamagedFlowRecord(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, store.FileName)
	st, err := store.Open(path, store.Options{KeepOpen: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	atGate := func(svc *engine.Service) string {
		t.Helper()
		out, err := svc.Plan(ctx, deadlineSpec, "main", nil, engine.PlanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		id := engine.FlowIDOf(out)
		if _, err := svc.StepDone(ctx, engine.StepReport{FlowID: id, StepID: "work", Result: map[string]any{}}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	// Opened two hours ago: its 60 s deadline has long passed.
	damaged := atGate(&engine.Service{ParseSpec: exprlang.ParseSpec, Store: st, Now: func() time.Time { return time.Now().Add(-2 * time.Hour) }})
	healthy := atGate(&engine.Service{ParseSpec: exprlang.ParseSpec, Store: st})
	sums := mustList(t, st)
	if s := sums[damaged]; s.Status != state.StatusAwaitingGate || s.Gate == nil || s.Gate.Deadline == nil || s.Gate.Deadline.After(time.Now()) {
		t.Fatalf("the flow to damage is not at an expired gate: %+v", s)
	}

	// Garbage into the flow's value, through bbolt itself.
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	garbage := []byte("\x00{not json at all")
	if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("flows")).Put([]byte(damaged), garbage) }); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	specFile := filepath.Join(t.TempDir(), "gate.stratum.yaml")
	if err := os.WriteFile(specFile, []byte(deadlineSpec), 0o600); err != nil {
		t.Fatal(err)
	}
	e := &cliEnv{t: t, home: home}
	for _, c := range []struct {
		args []string
		want string // on stdout
	}{
		{[]string{"query", "flows"}, healthy},
		{[]string{"query", "gates"}, healthy},
		{[]string{"plan", specFile}, `"status": "execute_step"`},
		{[]string{"gate", "approve", healthy, "review", "--resolved-by", "agent", "--note", "fine"}, `"ok": true`},
		{[]string{"tui", "--plain", "--once"}, " flows=2 "}, // the planned and the approved flow
	} {
		code, stdout, stderr := e.run("", c.args...)
		if code != 0 || !strings.Contains(stdout, c.want) {
			t.Fatalf("stratum %s: exit %d, stdout:\n%s\nstderr:\n%s", strings.Join(c.args, " "), code, stdout, stderr)
		}
		if strings.Contains(stdout, damaged) {
			t.Errorf("stratum %s shows the damaged flow:\n%s", strings.Join(c.args, " "), stdout)
		}
		if n := strings.Count(stderr, damaged); n != 1 || !strings.Contains(stderr, "damaged flow record") ||
			!strings.Contains(stderr, "gc --damaged") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("stratum %s: stderr should report the damaged flow once, on one line:\n%s", strings.Join(c.args, " "), stderr)
		}
	}

	code, stdout, stderr := e.run("", "gc", "--damaged")
	var report struct {
		Quarantined []store.Quarantined `json:"quarantined"`
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &report) != nil || len(report.Quarantined) != 1 ||
		report.Quarantined[0].FlowID != damaged || strings.Join(report.Quarantined[0].Records, ",") != "state,summary" {
		t.Fatalf("gc --damaged: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, args := range [][]string{{"query", "flows"}, {"store", "check"}, {"gc", "--damaged"}} {
		code, stdout, stderr := e.run("", args...)
		if code != 0 || strings.Contains(stdout+stderr, damaged) {
			t.Fatalf("stratum %s after gc --damaged: exit %d\n%s\n%s", strings.Join(args, " "), code, stdout, stderr)
		}
	}
	// The raw record is kept in the quarantine bucket.
	db, err = bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_ = db.View(func(tx *bolt.Tx) error {
		q := tx.Bucket([]byte("quarantine"))
		if q == nil || string(q.Get([]byte(damaged+"\x00state"))) != string(garbage) {
			t.Error("the damaged state is not in the quarantine bucket")
		}
		if tx.Bucket([]byte("flows")).Get([]byte(damaged)) != nil {
			t.Error("the damaged flow is still in flows")
		}
		return nil
	})
}

func mustList(t *testing.T, st engine.Store) map[string]state.FlowSummary {
	t.Helper()
	out := map[string]state.FlowSummary{}
	if err := st.View(context.Background(), func(tx engine.Tx) error {
		l, err := tx.List(engine.ListFilter{})
		for _, s := range l {
			out[s.FlowID] = s
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return out
}
