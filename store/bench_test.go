package store

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/store/storetest"
)

// realisticState is a flow half-way through a ten-step run: a spec of a few
// KiB, outputs and records for five steps, a checkpoint.
func realisticState(id string) *engine.FlowState {
	st := storetest.NewState(id, engine.StatusRunning)
	spec := "version: \"0.2\"\ncontracts:\n"
	for i := 0; i < 10; i++ {
		spec += fmt.Sprintf("  Out%d:\n    summary: {type: string}\n    score: {type: number}\n", i)
	}
	spec += "flows:\n  review_pr:\n    input: {pr: {type: string}}\n    steps:\n"
	for i := 0; i < 10; i++ {
		spec += fmt.Sprintf("      - id: s%d\n        function: f%d\n        inputs: {pr: \"$.input.pr\"}\n        ensure: [\"result.score > 0.5\"]\n", i, i)
	}
	st.RawSpec = spec
	for i := 0; i < 5; i++ {
		sid := fmt.Sprintf("s%d", i)
		st.StepOutputs[sid] = map[string]any{"summary": "The change looks fine; two nits about naming.", "score": 0.8}
		st.Attempts[sid] = 1
		st.Records = append(st.Records, engine.Record{Type: engine.RecordStep, StepID: sid, FunctionName: "f" + sid,
			Attempts: 1, DurationMS: 2300, At: time.Date(2026, 1, 1, 0, i, 0, 0, time.UTC)})
		st.DispatchedAt[sid] = time.Date(2026, 1, 1, 0, i, 0, 0, time.UTC)
	}
	st.CurrentIdx = 5
	st.Checkpoints["after_s2"] = &engine.Checkpoint{Label: "after_s2", StepOutputs: map[string]any{"s0": "x"}, CurrentIdx: 3}
	return st
}

// BenchmarkTransition is one durable state transition: open, Get, modify,
// Put, Append one event, commit (fsync), close — in a store holding only
// that flow, and in one holding 10,000 flows.
func BenchmarkTransition(b *testing.B) {
	for _, flows := range []int{1, 10000} {
		b.Run(fmt.Sprintf("flows=%d", flows), func(b *testing.B) {
			s, err := Open(filepath.Join(b.TempDir(), FileName), Options{})
			if err != nil {
				b.Fatal(err)
			}
			fill(b, s, flows-1)
			storePut(b, s, realisticState("bench"))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := transition(s, "bench", 0, i); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// fill adds n realistic flows in batches, a quarter of them at a gate.
func fill(b *testing.B, s *Store, n int) {
	statuses := []engine.FlowStatus{engine.StatusRunning, engine.StatusComplete, engine.StatusAwaitingGate, engine.StatusKilled}
	for start := 0; start < n; start += 1000 {
		if err := s.Update(bg, func(tx engine.Tx) error {
			for i := start; i < min(n, start+1000); i++ {
				st := realisticState(fmt.Sprintf("flow-%05d", i))
				st.Status = statuses[i%len(statuses)]
				if st.Status == engine.StatusAwaitingGate {
					st.Gate = &engine.PendingGate{StepID: "s5"}
				}
				if err := storetest.Put(tx, st); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkView is one read transaction (open, Get, close), for comparison.
func BenchmarkView(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), FileName), Options{})
	if err != nil {
		b.Fatal(err)
	}
	storePut(b, s, realisticState("bench"))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		storeGet(b, s, "bench")
	}
}

// BenchmarkFsync is the floor for a durable transition on this disk: write
// a 4 KiB page at a fixed offset in a temp file and fsync it (bbolt does two
// such syncs per commit: data pages, then the meta page).
func BenchmarkFsync(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "fsync"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	page := make([]byte, 4096)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		page[0] = byte(i)
		if _, err := f.WriteAt(page, 0); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkListFlows10k is List (no filter, no limit) over 10,000 flows, and
// the newest 50 (what a TUI page shows).
func BenchmarkListFlows10k(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), FileName), Options{})
	if err != nil {
		b.Fatal(err)
	}
	fill(b, s, 10000)
	for _, bc := range []struct {
		name string
		f    engine.ListFilter
		want int
	}{
		{"all", engine.ListFilter{}, 10000},
		{"newest50", engine.ListFilter{Limit: 50}, 50},
		{"status", engine.ListFilter{Status: engine.StatusRunning}, 2500},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if got := storeList(b, s, bc.f); len(got) != bc.want {
					b.Fatalf("List = %d flows, want %d", len(got), bc.want)
				}
			}
		})
	}
	b.Run("pendingGates", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if got := storeGates(b, s); len(got) != 2500 {
				b.Fatalf("PendingGates = %d", len(got))
			}
		}
	})
}
