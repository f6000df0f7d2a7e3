package etcdstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/store/etcdstore/etcdtest"
)

const leaseSpec = `version: "0.2"
flows:
  main:
    input: {}
    steps:
      - id: a
        intent: "a"
      - id: b
        intent: "b"
        depends_on: [a]
`

// TestRunnerLeaseClockSkew shows what the runner lease guarantees on etcd,
// where it lives in the flow state (see the package comment): a machine
// whose clock is ahead of the runner's by less than the TTL cannot take the
// flow or report into it; one whose clock is ahead by more presumes the
// runner dead early and takes the lease, and from that commit on the old
// holder can neither renew it nor write: exactly one holder's writes land,
// whatever the clocks say. Clock skew moves when a silent runner is
// presumed dead, never who may write.
func TestRunnerLeaseClockSkew(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	const ttl = 30 * time.Second
	machine := func(skew time.Duration) *engine.Service {
		return &engine.Service{Store: open(t, c, "/lease/"), Now: func() time.Time { return time.Now().Add(skew) }}
	}
	a := machine(0)
	lease := func(svc *engine.Service, id string) engine.Lease {
		now := svc.Now()
		return engine.Lease{ID: id, Heartbeat: now, ExpiresAt: now.Add(ttl)}
	}
	out, err := a.Plan(ctx, leaseSpec, "main", nil, engine.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := engine.FlowIDOf(out)
	if err := a.Claim(ctx, id, lease(a, "runner-a")); err != nil {
		t.Fatal(err)
	}
	owned := func(what string, out engine.Outcome, err error) {
		t.Helper()
		if e := engine.AsError(err); e == nil || e.Type != engine.ErrTypeFlowOwned {
			t.Fatalf("%s: %v %v, want flow_owned", what, out, err)
		}
	}

	// Ahead by less than the TTL: the lease is live for b too.
	b := machine(ttl / 3)
	if err := b.Claim(ctx, id, lease(b, "runner-b")); !errors.Is(err, engine.ErrLeaseHeld) {
		t.Fatalf("claim by a machine 10s ahead: %v, want ErrLeaseHeld", err)
	}
	out, err = b.StepDone(ctx, id, "a", map[string]any{}, engine.ReportOptions{})
	owned("agent report from a machine 10s ahead", out, err)

	// Ahead by more than the TTL: c presumes runner-a dead and takes over.
	cm := machine(ttl + 10*time.Second)
	if err := cm.Claim(ctx, id, lease(cm, "runner-c")); err != nil {
		t.Fatalf("claim by a machine 40s ahead: %v", err)
	}
	// runner-a is alive, but from the takeover's commit on it can neither
	// renew its lease nor report: its writes never land beside c's.
	if err := a.Claim(ctx, id, lease(a, "runner-a")); !errors.Is(err, engine.ErrLeaseHeld) {
		t.Fatalf("runner-a's heartbeat after the takeover: %v, want ErrLeaseHeld", err)
	}
	out, err = a.StepDone(ctx, id, "a", map[string]any{}, engine.ReportOptions{Actor: "runner-a"})
	owned("runner-a's report after the takeover", out, err)
	if _, err := cm.StepDone(ctx, id, "a", map[string]any{}, engine.ReportOptions{Actor: "runner-c"}); err != nil {
		t.Fatalf("the new holder's report: %v", err)
	}
	st, err := a.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if st.Owner == nil || st.Owner.ID != "runner-c" {
		t.Fatalf("owner %+v, want runner-c", st.Owner)
	}
}
