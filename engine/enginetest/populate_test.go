package enginetest_test

import (
	"context"
	"os"
	"reflect"
	"strconv"
	"testing"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/enginetest"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs/exprlang"
	"github.com/stratum-go/stratum/store"
)

// TestPopulate checks the fixture generator on a small store: every flow is
// there, a quarter at its gate, each state readable and summarised as the
// engine summarises it.
func TestPopulate(t *testing.T) {
	t.Setenv("STRATUM_HOME", t.TempDir())
	ctx := context.Background()
	st := enginetest.New()
	if err := enginetest.Populate(ctx, st, enginetest.PopulateOptions{Flows: 42, Batch: 10}); err != nil {
		t.Fatal(err)
	}
	svc := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: st}
	all, err := svc.Query().List(ctx, engine.ListFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 42 {
		t.Fatalf("%d flows, want 42", len(all))
	}
	gates, err := svc.Query().PendingReviews(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Flows 4, 8, …, 40 and the gate template.
	if len(gates) != 11 {
		t.Fatalf("%d flows at a gate, want 11", len(gates))
	}
	for _, sum := range all {
		fs, err := svc.Query().FlowWithSpec(ctx, sum.FlowID)
		if err != nil {
			t.Fatal(err)
		}
		if fs.Flow == nil {
			t.Fatalf("flow %s: its spec does not parse", sum.FlowID)
		}
		want := engine.Summarize(fs.State, fs.Flow)
		if want.Status != sum.Status || want.CurrentStep != sum.CurrentStep || want.TotalSteps != sum.TotalSteps || want.Version != sum.Version {
			t.Fatalf("flow %s: stored summary %+v, the engine's %+v", sum.FlowID, sum, want)
		}
	}
}

// TestPopulateFile writes a fixture store file for measurements outside
// go test (stratum query flows, stratum tui --plain --once):
//
//	STRATUM_POPULATE=/tmp/100k/stratum.db STRATUM_POPULATE_FLOWS=100000 go test ./engine/enginetest -run TestPopulateFile -v
//
// It is skipped without STRATUM_POPULATE. STRATUM_POPULATE_BROKEN=1 stores
// a spec that no longer parses; STRATUM_POPULATE_GATE_EVERY and
// STRATUM_POPULATE_RUNNING_EVERY set PopulateOptions' GateEvery and
// RunningEvery.
func TestPopulateFile(t *testing.T) {
	path := os.Getenv("STRATUM_POPULATE")
	if path == "" {
		t.Skip("STRATUM_POPULATE is not set")
	}
	n, err := strconv.Atoi(os.Getenv("STRATUM_POPULATE_FLOWS"))
	if err != nil {
		n = 100_000
	}
	s, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	opt := enginetest.PopulateOptions{Flows: n, BrokenSpec: os.Getenv("STRATUM_POPULATE_BROKEN") == "1"}
	opt.GateEvery, _ = strconv.Atoi(os.Getenv("STRATUM_POPULATE_GATE_EVERY"))
	opt.RunningEvery, _ = strconv.Atoi(os.Getenv("STRATUM_POPULATE_RUNNING_EVERY"))
	if err := enginetest.Populate(context.Background(), s, opt); err != nil {
		t.Fatal(err)
	}
}

// TestPopulateRunningEvery: with RunningEvery the flows not at a gate are
// complete but every RunningEvery-th, and so is their stored summary.
func TestPopulateRunningEvery(t *testing.T) {
	t.Setenv("STRATUM_HOME", t.TempDir())
	ctx := context.Background()
	st := enginetest.New()
	if err := enginetest.Populate(ctx, st, enginetest.PopulateOptions{Flows: 40, GateEvery: 10, RunningEvery: 3}); err != nil {
		t.Fatal(err)
	}
	svc := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: st}
	count := map[state.FlowStatus]int{}
	all, err := svc.Query().List(ctx, engine.ListFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, sum := range all {
		count[sum.Status]++
	}
	// The three templates and copies 3..39: at a gate 10, 20, 30; running
	// 3, 6, 9, 12, 15, 18, 21, 24, 27, 33, 36, 39.
	want := map[state.FlowStatus]int{state.StatusAwaitingGate: 1 + 3, state.StatusRunning: 1 + 12, state.StatusComplete: 1 + 37 - 15}
	if !reflect.DeepEqual(count, want) || len(all) != 40 {
		t.Fatalf("%d flows by status %v, want %v", len(all), count, want)
	}
}
