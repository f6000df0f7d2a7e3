package etcdstore_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/store/etcdstore"
	"github.com/stratum-go/stratum/store/etcdstore/etcdtest"
	"github.com/stratum-go/stratum/store/storetest"
)

// etcdMeter reads the members' operation counters from /metrics. The
// members of an in-process cluster share their counters, and a write is
// applied by every member, so they are divided by the number of members:
// the cost to the average member (exact for one member).
func etcdMeter(c *etcdtest.Cluster) storetest.Meter {
	return func(t testing.TB) storetest.Cost {
		t.Helper()
		m, err := c.Metric(0, "etcd_mvcc_put_total", "etcd_mvcc_delete_total", "etcd_mvcc_range_total",
			"etcd_mvcc_txn_total", "etcd_debugging_mvcc_total_put_size_in_bytes", "etcd_mvcc_db_total_size_in_use_in_bytes")
		if err != nil {
			t.Fatal(err)
		}
		n := float64(c.Members())
		return storetest.Cost{
			Puts: m["etcd_mvcc_put_total"] / n, Deletes: m["etcd_mvcc_delete_total"] / n,
			Ranges: m["etcd_mvcc_range_total"] / n, Txns: m["etcd_mvcc_txn_total"] / n,
			PutBytes: m["etcd_debugging_mvcc_total_put_size_in_bytes"] / n,
			DBBytes:  m["etcd_mvcc_db_total_size_in_use_in_bytes"],
		}
	}
}

// handles opens the prefix n times, as n processes would.
func handles(t *testing.T, c *etcdtest.Cluster, prefix string, n int) []engine.Store {
	t.Helper()
	out := make([]engine.Store, n)
	for i := range out {
		s, err := etcdstore.Open(context.Background(), etcdstore.Options{Endpoints: c.Endpoints, Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		out[i] = s
	}
	return out
}

// TestTransitionCost writes 5,000 transitions through four handles, each
// with a watcher, on one and on three members, and checks from the
// members' own counters that a transition costs at most
// maxOpsPerTransition etcd operations, maxPutBytesPerTransition bytes put
// and maxDBBytesPerTransition bytes of database growth, the same at the
// end as at the start (-short: skipped).
func TestTransitionCost(t *testing.T) {
	if testing.Short() {
		t.Skip("5,000 transitions per cluster (-short)")
	}
	for _, members := range []int{1, 3} {
		t.Run(fmt.Sprintf("members=%d", members), func(t *testing.T) {
			c := etcdtest.Start(t, members)
			m0, s0 := etcdstore.FeedMisses(), etcdstore.LogScans()
			storetest.RunTransitionCost(t, handles(t, c, "cost", 4), etcdMeter(c), storetest.CostOptions{Transitions: costN,
				MaxOps: maxOpsPerTransition, MaxPutBytes: maxPutBytesPerTransition, MaxDBBytes: maxDBBytesPerTransition})
			t.Logf("reads of the recent log the feed did not answer: %d; reads of the log that scanned its keys: %d",
				etcdstore.FeedMisses()-m0, etcdstore.LogScans()-s0)
		})
	}
}

// The bounds TestTransitionCost holds a step_done to, as the members count
// it (measured with schema 7: 8.7 operations on one member, 7.1 on three;
// 1.67 KB put; +2.3 KB of database). Schema 6 took 13.7 operations (12.1
// on three), 2.45 KB put and 3.7 KB of database: its events were written
// pending, then moved into the ordered log; schema 4 took 20 operations
// and 7.3 KB put.
const (
	maxOpsPerTransition      = 10
	maxPutBytesPerTransition = 3000
	maxDBBytesPerTransition  = 6000
)

// costN is how many transitions TestTransitionCost writes (STRATUM_COST_N
// overrides it, to look further).
var costN = func() int {
	if n, err := strconv.Atoi(os.Getenv("STRATUM_COST_N")); err == nil && n > 0 {
		return n
	}
	return 5000
}()

// BenchmarkHistory writes 100,000 transitions (STRATUM_COST_N overrides)
// on one member that fsyncs, through four handles each with a watcher, and
// reports the rate of the first and of the last 10 % (a cost that grows
// with history shows as a fall), the etcd operations and bytes put per
// transition over the last 10 %, the database's size in use at the end,
// and its file's size before and after stratum store compact --defrag.
// b.N is ignored: one run is the measurement.
//
//	go test ./store/etcdstore -run '^$' -bench History -benchtime 1x -timeout 60m
func BenchmarkHistory(b *testing.B) {
	n := 100000
	if v, err := strconv.Atoi(os.Getenv("STRATUM_COST_N")); err == nil && v > 0 {
		n = v
	}
	c := etcdtest.StartFsync(b, 1)
	hs := make([]engine.Store, 4)
	for i := range hs {
		s, err := etcdstore.Open(context.Background(), etcdstore.Options{Endpoints: c.Endpoints, Prefix: "history"})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		hs[i] = s
	}
	b.ResetTimer()
	ws := storetest.RunTransitionCost(b, hs, etcdMeter(c), storetest.CostOptions{Transitions: n, Window: n / 10})
	b.StopTimer()
	first, last := ws[0], ws[len(ws)-1]
	b.ReportMetric(first.Rate, "first10%-transitions/s")
	b.ReportMetric(last.Rate, "last10%-transitions/s")
	b.ReportMetric(last.Ops(), "ops/transition")
	b.ReportMetric(last.PutBytes, "put-B/transition")
	b.ReportMetric(last.Size/(1<<20), "db-in-use-MiB")
	// What stratum store compact --defrag returns.
	e := hs[0].(*etcdstore.Store)
	res, err := e.Compact(context.Background(), etcdstore.CompactOptions{Defrag: true})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(res.Before.Largest().Size)/(1<<20), "db-file-MiB")
	b.ReportMetric(float64(res.After.Largest().Size)/(1<<20), "db-file-compacted-MiB")
}
