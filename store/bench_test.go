package store

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/store/storetest"
)

// realisticState is a flow half-way through a ten-step run: a spec of a few
// KiB, outputs and records for five steps, a checkpoint.
func realisticState(id string) *state.FlowState {
	st := storetest.NewState(id, state.StatusRunning)
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
		st.Records = append(st.Records, state.Record{Type: state.RecordStep, StepID: sid, FunctionName: "f" + sid,
			Attempts: 1, DurationMS: 2300, At: time.Date(2026, 1, 1, 0, i, 0, 0, time.UTC)})
		st.DispatchedAt[sid] = time.Date(2026, 1, 1, 0, i, 0, 0, time.UTC)
	}
	st.CurrentIdx = 5
	st.Checkpoints["after_s2"] = &state.Checkpoint{Label: "after_s2", StepProgress: state.StepProgress{StepOutputs: map[string]any{"s0": "x"}, CurrentIdx: 3}}
	return st
}

// BenchmarkTransition is one durable state transition: open, Get, modify,
// Put, Append one event, commit (fsync), close — in a store holding only
// that flow, and in one holding 10,000 flows. Besides the mean (ns/op) it
// reports the p50 and p95 of a transition, the p50 of a bare fsync (as
// BenchmarkFsync does it) measured in the same directory just before, and
// their ratio (x-fsync-p50), the figure the quality bar is about.
func BenchmarkTransition(b *testing.B) {
	for _, flows := range []int{1, 10000} {
		b.Run(fmt.Sprintf("flows=%d", flows), func(b *testing.B) {
			dir := b.TempDir()
			s, err := Open(filepath.Join(dir, FileName), Options{})
			if err != nil {
				b.Fatal(err)
			}
			fill(b, s, flows-1)
			storePut(b, s, realisticState("bench"))
			fs := fsyncTimes(b, dir, 200)
			ds := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				if err := transition(s, "bench", 0, i); err != nil {
					b.Fatal(err)
				}
				ds = append(ds, time.Since(t0))
			}
			b.StopTimer()
			p50, p95 := percentiles(ds)
			f50, _ := percentiles(fs)
			b.ReportMetric(float64(p50.Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(p95.Nanoseconds()), "p95-ns")
			b.ReportMetric(float64(f50.Nanoseconds()), "fsync-p50-ns")
			b.ReportMetric(float64(p50)/float64(f50), "x-fsync-p50")
		})
	}
}

// fsyncTimes times n bare fsyncs of a 4 KiB page in a file in dir.
func fsyncTimes(b *testing.B, dir string, n int) []time.Duration {
	f, err := os.Create(filepath.Join(dir, "fsync"))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = f.Close(); _ = os.Remove(f.Name()) }()
	page := make([]byte, 4096)
	ds := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		t0 := time.Now()
		page[0] = byte(i)
		if _, err := f.WriteAt(page, 0); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(t0))
	}
	return ds
}

// percentiles returns the 50th and 95th percentiles (nearest rank).
func percentiles(ds []time.Duration) (time.Duration, time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := func(p float64) time.Duration {
		i := min(max(int(p*float64(len(s))+0.999999)-1, 0), len(s)-1)
		return s[i]
	}
	return rank(0.50), rank(0.95)
}

// fill adds n realistic flows in batches, a quarter of them at a gate.
func fill(b *testing.B, s *Store, n int) {
	statuses := []state.FlowStatus{state.StatusRunning, state.StatusComplete, state.StatusAwaitingGate, state.StatusKilled}
	for start := 0; start < n; start += 1000 {
		if err := s.Update(bg, func(tx engine.Tx) error {
			for i := start; i < min(n, start+1000); i++ {
				st := realisticState(fmt.Sprintf("flow-%05d", i))
				st.Status = statuses[i%len(statuses)]
				if st.Status == state.StatusAwaitingGate {
					st.Gate = &state.PendingGate{StepID: "s5"}
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
// such syncs per commit: data pages, then the meta page). It reports the
// p50 and p95 besides the mean.
func BenchmarkFsync(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "fsync"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	page := make([]byte, 4096)
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		page[0] = byte(i)
		if _, err := f.WriteAt(page, 0); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(t0))
	}
	b.StopTimer()
	p50, p95 := percentiles(ds)
	b.ReportMetric(float64(p50.Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(p95.Nanoseconds()), "p95-ns")
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
		{"status", engine.ListFilter{Status: state.StatusRunning}, 2500},
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

// BenchmarkCheck is the page-level consistency check (bbolt's tx.Check,
// what a process runs before its first write to a file it has not verified:
// verify.go) over a store of 10,000 realistic flows, and the whole Check
// (pages and the store's own invariants) for comparison.
func BenchmarkCheck(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), FileName), Options{})
	if err != nil {
		b.Fatal(err)
	}
	fill(b, s, 10000)
	fi, _ := os.Stat(s.Path())
	b.Logf("file: %d bytes", fi.Size())
	b.Run("pages", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := s.CheckPages(bg); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("full", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := s.Check(bg); err != nil {
				b.Fatal(err)
			}
		}
	})
}
