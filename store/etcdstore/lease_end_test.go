package etcdstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/store/etcdstore/etcdtest"
	"github.com/stratum-go/stratum/store/storetest"
)

// TestFinishedFlowKeepsNoLease: the transition that ends a flow trims
// what only a flow under way needs: its lease key (and the etcd lease,
// once it backs no other flow) and the lease mark of its records, while
// the owner stays in the state as written.
func TestFinishedFlowKeepsNoLease(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	const prefix = "/finished/"
	svc := machine(t, c, prefix, 0)
	cli := rawClient(t, c)
	f := plan(t, svc)
	owner := leaseOf(svc, "runner-end", time.Hour)
	if err := svc.Leases().Claim(ctx, f, owner); err != nil {
		t.Fatal(err)
	}
	keys := leaseKeys(t, cli, prefix)
	e := keys["runner-end\x00"+f]
	if len(keys) != 1 || e == 0 {
		t.Fatalf("lease keys %v: want the flow's", keys)
	}
	for _, status := range []state.FlowStatus{state.StatusRunning, state.StatusComplete} {
		if err := svc.Store.Update(ctx, func(tx engine.Tx) error {
			st, err := tx.Get(f)
			if err != nil {
				return err
			}
			st.Status = status
			return storetest.Put(tx, st)
		}); err != nil {
			t.Fatal(err)
		}
		running := status == state.StatusRunning
		if keys := leaseKeys(t, cli, prefix); running != (len(keys) == 1) || len(keys) > 1 {
			t.Fatalf("lease keys of the %s flow: %v", status, keys)
		}
		// The summary (s/, never deflated) carries the mark while running.
		r, err := cli.Get(ctx, prefix+"\x00s/"+f)
		if err != nil || len(r.Kvs) != 1 {
			t.Fatalf("s/%s: %v %v", f, r, err)
		}
		if marked := strings.HasPrefix(string(r.Kvs[0].Value), `{"etcdstore_lease"`); marked != running {
			t.Fatalf("summary of the %s flow marked with its lease: %v", status, marked)
		}
	}
	if r, err := cli.TimeToLive(ctx, e); err != nil || r.TTL != -1 {
		t.Fatalf("etcd lease TTL %v %v after the flow it backed completed, want -1 (revoked)", r, err)
	}
	st, err := svc.Query().Get(ctx, f)
	if err != nil || st.Owner == nil || st.Owner.ID != "runner-end" || !st.Owner.ExpiresAt.Equal(owner.ExpiresAt) {
		t.Fatalf("owner of the completed flow %+v %v, want %+v as written", st.Owner, err, owner)
	}
}
