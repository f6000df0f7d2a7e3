package backend_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/store/backend"
	"github.com/stratum-go/stratum/store/etcdstore/etcdtest"
	"github.com/stratum-go/stratum/store/shared"
	"github.com/stratum-go/stratum/store/storetest"
)

// BenchmarkTransitions compares the backends on transitions like the
// engine's (read a flow, put it with its summary, append two events), each
// client its own handle (its own connection or file handle) on its own
// flow, with a state of about 3 KB, as separate processes would be: bbolt,
// and etcd on a local cluster of 1 (etcd1) and of 3 members (etcd3) that
// fsync. Reported: transitions/s over all clients, p50/p95 latency of one
// transition, the CPU time of the whole process (clients and the
// in-process etcd members) per transition, and the delay from a commit on
// one handle to its delivery by another handle's Watch.
//
//	go test ./store/backend -run '^$' -bench Transitions -benchtime 400x
func BenchmarkTransitions(b *testing.B) {
	c := etcdtest.StartFsync(b, 3)
	c1 := etcdtest.StartFsync(b, 1)
	dir := b.TempDir()
	stores := map[string]func(b *testing.B) *backend.Opened{
		"bbolt": func(b *testing.B) *backend.Opened {
			o, err := backend.Open(context.Background(), shared.Settings{Home: dir, Store: filepath.Join(dir, "bench.db")})
			if err != nil {
				b.Fatal(err)
			}
			return o
		},
		"etcd1": func(b *testing.B) *backend.Opened {
			o, err := backend.Open(context.Background(), shared.Settings{Store: c1.URL("bench")})
			if err != nil {
				b.Fatal(err)
			}
			return o
		},
		"etcd3": func(b *testing.B) *backend.Opened {
			o, err := backend.Open(context.Background(), shared.Settings{Store: c.URL("bench")})
			if err != nil {
				b.Fatal(err)
			}
			return o
		},
	}
	run := 0
	for _, name := range []string{"bbolt", "etcd1", "etcd3"} {
		for _, clients := range []int{1, 4} {
			b.Run(fmt.Sprintf("%s/clients=%d", name, clients), func(b *testing.B) {
				run++ // the flows of each run are new (b.Run calls this more than once)
				handles := make([]*backend.Opened, clients)
				for i := range handles {
					handles[i] = stores[name](b)
					defer handles[i].Close()
					id := fmt.Sprintf("bench-%d-%d", run, i)
					if err := handles[i].Update(context.Background(), func(tx engine.Tx) error {
						st := storetest.NewState(id, state.StatusRunning)
						st.Inputs["doc"] = strings.Repeat("x", 3000) // a 3 KB state
						return storetest.Put(tx, st)
					}); err != nil {
						b.Fatal(err)
					}
				}
				var mu sync.Mutex
				var lat []time.Duration
				b.ResetTimer()
				cpu0 := cpuTime()
				t0 := time.Now()
				var wg sync.WaitGroup
				for i, h := range handles {
					wg.Add(1)
					go func() {
						defer wg.Done()
						id := fmt.Sprintf("bench-%d-%d", run, i)
						for n := i; n < b.N; n += clients {
							s := time.Now()
							err := h.Update(context.Background(), func(tx engine.Tx) error {
								st, err := tx.Get(id)
								if err != nil {
									return err
								}
								st.Round++
								if err := storetest.Put(tx, st); err != nil {
									return err
								}
								return tx.Append(engine.Event{FlowID: id, Type: engine.EventStepDone, StepID: "s"},
									engine.Event{FlowID: id, Type: engine.EventStepDispatched, StepID: "t"})
							})
							d := time.Since(s)
							if err != nil {
								b.Error(err)
								return
							}
							mu.Lock()
							lat = append(lat, d)
							mu.Unlock()
						}
					}()
				}
				wg.Wait()
				elapsed := time.Since(t0)
				cpu := cpuTime() - cpu0
				b.StopTimer()
				slices.Sort(lat)
				if len(lat) > 0 {
					b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "transitions/s")
					b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
					b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, "p95-ms")
					b.ReportMetric(cpu.Seconds()*1000/float64(len(lat)), "cpu-ms/transition")
				}
				if clients == 1 {
					b.ReportMetric(watchDelay(b, stores[name](b), handles[0]), "watch-p50-ms")
				}
			})
		}
	}
}

// cpuTime is the CPU time (user and system) the process has used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// watchDelay is the p50 delay from a commit on writer to its delivery by a
// Watch on another handle (what a TUI in another process sees).
func watchDelay(b *testing.B, watcher, writer *backend.Opened) float64 {
	defer watcher.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var last uint64
	_ = watcher.View(ctx, func(tx engine.Tx) error { var err error; last, err = tx.LastSeq(); return err })
	w, err := watcher.Watch(ctx, last)
	if err != nil {
		b.Fatal(err)
	}
	var ds []time.Duration
	for i := 0; i < 20; i++ {
		t0 := time.Now()
		if err := writer.Update(ctx, func(tx engine.Tx) error {
			return tx.Append(engine.Event{FlowID: "bench-0", Type: engine.EventGateResolved})
		}); err != nil {
			b.Fatal(err)
		}
		select {
		case <-w:
			ds = append(ds, time.Since(t0))
		case <-time.After(10 * time.Second):
			b.Fatal("Watch delivered nothing in 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	slices.Sort(ds)
	return float64(ds[len(ds)/2].Microseconds()) / 1000
}
