package tui

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/enginetest"
	"github.com/stratum-go/stratum/specs"
	"github.com/stratum-go/stratum/specs/exprlang"
	"github.com/stratum-go/stratum/store"
)

// Benchmark store: 10,000 flows (1 in 100 waiting at a gate) and 100,000
// events, built once per test binary run.
const (
	benchFlows  = 10_000
	benchEvents = 100_000
)

var (
	benchOnce sync.Once
	benchSrc  Source
	benchErr  error
	benchDir  string
)

func benchSource(b *testing.B) Source {
	b.Helper()
	benchOnce.Do(func() {
		// Not b.TempDir: the store outlives the benchmark that built it.
		dir, err := os.MkdirTemp("", "stratum-tui-bench")
		if err != nil {
			benchErr = err
			return
		}
		benchDir = dir
		benchSrc, benchErr = buildBenchStore(filepath.Join(dir, "stratum.db"))
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	if seq, err := benchSrc.LastSeq(context.Background()); err == nil {
		b.Logf("bench store: %d flows, %d events", benchFlows, seq)
	}
	return benchSrc
}

func buildBenchStore(path string) (Source, error) {
	ctx := context.Background()
	svc := &engine.Service{ParseSpec: exprlang.ParseSpec}
	st, err := store.Open(path, store.Options{})
	if err != nil {
		return nil, err
	}
	svc.Store = st
	// Two template states: one running, one waiting at its gate.
	r, err := svc.Plan(ctx, gateSpec, "deploy", map[string]any{"name": "x"}, engine.PlanOptions{})
	if err != nil {
		return nil, err
	}
	runID := engine.FlowIDOf(r)
	r, err = svc.Plan(ctx, gateSpec, "deploy", map[string]any{"name": "y"}, engine.PlanOptions{})
	if err != nil {
		return nil, err
	}
	gateID := engine.FlowIDOf(r)
	for _, res := range []any{map[string]any{"ok": false}, map[string]any{"ok": true}} {
		if _, err := svc.StepDone(ctx, engine.StepReport{FlowID: gateID, StepID: "build", Result: res}); err != nil {
			return nil, err
		}
	}
	running, err := svc.Query().Get(ctx, runID)
	if err != nil {
		return nil, err
	}
	waiting, err := svc.Query().Get(ctx, gateID)
	if err != nil {
		return nil, err
	}
	sp, ds := specs.Parse("", []byte(gateSpec), exprlang.Compile)
	if sp == nil || ds.HasErrors() {
		return nil, ds
	}
	last, err := svc.Query().LastSeq(ctx)
	if err != nil {
		return nil, err
	}
	perFlow := (benchEvents - int(last)) / (benchFlows - 2)
	extra := benchEvents - int(last) - perFlow*(benchFlows-2) // to the first copy
	const batch = 500
	for start := 2; start < benchFlows; start += batch {
		err := st.Update(ctx, func(tx engine.Tx) error {
			for i := start; i < min(start+batch, benchFlows); i++ {
				tmpl := running
				if i%100 == 0 {
					tmpl = waiting
				}
				cp := *tmpl
				cp.FlowID = fmt.Sprintf("%08d-0000-4000-8000-%012d", i, i)
				cp.Version = 0
				expect := cp.Stamp(tmpl.UpdatedAt)
				if err := tx.Put(&cp, engine.Summarize(&cp, sp.Flows[cp.FlowName]), expect); err != nil {
					return err
				}
				n := perFlow
				if i == 2 {
					n += extra
				}
				evs := make([]engine.Event, n)
				for j := range evs {
					evs[j] = engine.Event{FlowID: cp.FlowID, Type: engine.EventStepFailed, StepID: "build",
						Data: engine.StepFailed{Attempt: j + 1, Violations: []string{"ensure 'result.ok == True' failed"}}}
				}
				if err := tx.Append(evs...); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return ServiceSource(svc), nil
}

func loadedModel(b *testing.B, src Source, w, h int) *Model {
	m := New(Options{Source: src, Keys: DefaultKeyMap(), Styles: DefaultStyles(NewRenderer(nil, true)), Tick: -1, Reviewer: "bench"})
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	drive(m, m.Init())
	if m.flows.n != benchFlows {
		b.Fatalf("loaded %d flows, want %d (%v)", m.flows.n, benchFlows, m.loadErr)
	}
	return m
}

// BenchmarkFirstFrame: from a new model to its first full frame (flows,
// pending gates, the selected flow's detail and events, View), with the
// heap the loaded model holds.
func BenchmarkFirstFrame(b *testing.B) {
	src := benchSource(b)
	b.ReportAllocs()
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	var keep *Model
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		keep = loadedModel(b, src, 120, 40)
		_ = keep.View()
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&ms1)
	b.ReportMetric(float64(int64(ms1.HeapAlloc)-int64(ms0.HeapAlloc))/(1<<20), "heap-MB")
	runtime.KeepAlive(keep)
}

// BenchmarkView is the cost of one frame of each pane on the loaded model.
func BenchmarkView(b *testing.B) {
	src := benchSource(b)
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		m := loadedModel(b, src, size[0], size[1])
		for _, p := range []struct {
			name string
			key  string
		}{{"flows", "1"}, {"trace", "2"}, {"gates", "3"}} {
			press(m, p.key)
			b.Run(fmt.Sprintf("%s_%dx%d", p.name, size[0], size[1]), func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					_ = m.View()
				}
			})
		}
	}
}

// BenchmarkRefresh is the reload after a live event: flows, pending gates
// and the selected flow's detail.
func BenchmarkRefresh(b *testing.B) {
	src := benchSource(b)
	m := loadedModel(b, src, 120, 40)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		drive(m, m.handleEngineEvents(nil))
	}
}

var (
	big100kOnce sync.Once
	big100kSrc  Source
	big100kErr  error
	big100kDir  string // removed by TestMain
)

// big100k is a bbolt store of 100,000 flows, a quarter of them waiting at
// a gate (enginetest.Populate), built once per test binary in a temporary
// directory, or the file STRATUM_BENCH_STORE names (written by
// enginetest's TestPopulateFile) to skip the build.
func big100k(b *testing.B) Source {
	b.Helper()
	big100kOnce.Do(func() {
		path := os.Getenv("STRATUM_BENCH_STORE")
		build := path == ""
		if build {
			dir, err := os.MkdirTemp("", "stratum-tui-bench100k")
			if err != nil {
				big100kErr = err
				return
			}
			big100kDir, path = dir, filepath.Join(dir, "stratum.db")
		}
		st, err := store.Open(path, store.Options{})
		if err == nil && build {
			err = enginetest.Populate(context.Background(), st, enginetest.PopulateOptions{Flows: 100_000})
		}
		big100kSrc, big100kErr = ServiceSource(&engine.Service{ParseSpec: exprlang.ParseSpec, Store: st}), err
	})
	if big100kErr != nil {
		b.Fatal(big100kErr)
	}
	return big100kSrc
}

// heapAfter runs fn and reports the heap it leaves reachable (what it
// returns is kept alive until the measurement).
func heapAfter(b *testing.B, fn func() any) {
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	keep := fn()
	runtime.GC()
	runtime.ReadMemStats(&ms1)
	b.ReportMetric(float64(int64(ms1.HeapAlloc)-int64(ms0.HeapAlloc))/(1<<20), "heap-MB")
	runtime.KeepAlive(keep)
}

// BenchmarkPlainOnce100k is `stratum tui --plain --once` at 100,000 flows
// (25,000 at a gate): the state line and one line per waiting gate.
func BenchmarkPlainOnce100k(b *testing.B) {
	b.Setenv("STRATUM_HOME", b.TempDir())
	src := big100k(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := RunPlain(context.Background(), PlainOptions{Source: src, Out: io.Discard, Once: true}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFirstFrame100k: the console's first full frame at 100,000 flows
// (25,000 at a gate), with the heap the loaded model holds.
func BenchmarkFirstFrame100k(b *testing.B) {
	b.Setenv("STRATUM_HOME", b.TempDir())
	src := big100k(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m := New(Options{Source: src, Keys: DefaultKeyMap(), Styles: DefaultStyles(NewRenderer(nil, true)), Tick: -1, Reviewer: "bench"})
		m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
		drive(m, m.Init())
		if m.flows.n != 100_000 || len(m.reviews) != 25_000 {
			if os.Getenv("STRATUM_BENCH_STORE") == "" || m.flows.n == 0 {
				b.Fatalf("loaded %d flows and %d gates (%v)", m.flows.n, len(m.reviews), m.loadErr)
			}
		}
		_ = m.View()
	}
	b.StopTimer()
	heapAfter(b, func() any {
		m := New(Options{Source: src, Keys: DefaultKeyMap(), Styles: DefaultStyles(NewRenderer(nil, true)), Tick: -1, Reviewer: "bench"})
		m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
		drive(m, m.Init())
		return m
	})
}

// BenchmarkRefresh100k is the reload after a live event at 100,000 flows
// (25,000 at a gate; or the store STRATUM_BENCH_STORE names): the header's
// counts, the Flows window, the pending gates and the selected flow's
// detail.
func BenchmarkRefresh100k(b *testing.B) {
	b.Setenv("STRATUM_HOME", b.TempDir())
	src := big100k(b)
	m := New(Options{Source: src, Keys: DefaultKeyMap(), Styles: DefaultStyles(NewRenderer(nil, true)), Tick: -1, Reviewer: "bench"})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	drive(m, m.Init())
	if m.flows.n == 0 {
		b.Fatalf("loaded no flows (%v)", m.loadErr)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		drive(m, m.handleEngineEvents(nil))
	}
}
