package clijson_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/clijson"
	"github.com/stratum-go/stratum/engine/enginetest"
	"github.com/stratum-go/stratum/specs/exprlang"
	"github.com/stratum-go/stratum/store"
)

var (
	bigOnce  sync.Once
	bigStore *store.Store
	bigErr   error
	bigDir   string // removed by TestMain
)

func TestMain(m *testing.M) {
	code := m.Run()
	if bigDir != "" {
		_ = os.RemoveAll(bigDir)
	}
	os.Exit(code)
}

// bigStore100k is a bbolt store of 100,000 flows (enginetest.Populate), built
// once per test binary in a temporary directory, or the file
// STRATUM_BENCH_STORE names (one TestPopulateFile wrote) to skip the build.
func bigStore100k(b *testing.B) *store.Store {
	b.Helper()
	bigOnce.Do(func() {
		path := os.Getenv("STRATUM_BENCH_STORE")
		build := path == ""
		if build {
			dir, err := os.MkdirTemp("", "stratum-query-bench")
			if err != nil {
				bigErr = err
				return
			}
			bigDir, path = dir, filepath.Join(dir, "stratum.db")
		}
		bigStore, bigErr = store.Open(path, store.Options{})
		if bigErr == nil && build {
			bigErr = enginetest.Populate(context.Background(), bigStore, enginetest.PopulateOptions{Flows: 100_000})
		}
	})
	if bigErr != nil {
		b.Fatal(bigErr)
	}
	return bigStore
}

// BenchmarkQueryFlows100k is `stratum query flows` at 100,000 flows: the
// listing read from a bbolt store and its JSON written (WriteFlows).
func BenchmarkQueryFlows100k(b *testing.B) {
	b.Setenv("STRATUM_HOME", b.TempDir())
	svc := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: bigStore100k(b)}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		list, err := svc.Query().List(ctx, engine.ListFilter{})
		if err != nil {
			b.Fatal(err)
		}
		if len(list) != 100_000 {
			b.Fatalf("%d flows", len(list))
		}
		if err := clijson.WriteFlows(io.Discard, list, time.Now()); err != nil {
			b.Fatal(err)
		}
	}
}
