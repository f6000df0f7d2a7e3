package etcdstore_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/specs/exprlang"

	"github.com/stratum-go/stratum/engine/run"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/specs"
	"github.com/stratum-go/stratum/store/etcdstore"
	"github.com/stratum-go/stratum/store/etcdstore/etcdtest"
	"github.com/stratum-go/stratum/store/storetest"
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

// machine is a process on a machine whose clock is off by skew: its store
// and its engine read the same (skewed) clock, as in stratum.
func machine(t *testing.T, c *etcdtest.Cluster, prefix string, skew time.Duration) *engine.Service {
	t.Helper()
	now := func() time.Time { return time.Now().Add(skew) }
	s, err := etcdstore.Open(context.Background(), etcdstore.Options{Endpoints: c.Endpoints, Prefix: prefix, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &engine.Service{ParseSpec: exprlang.ParseSpec, Store: s, Now: now}
}

// rawClient is a plain etcd client, to look at lease keys and etcd leases.
func rawClient(t *testing.T, c *etcdtest.Cluster) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// leaseKeys maps the lease keys under prefix ("<runner lease>\x00<flow>")
// to their etcd leases (below the prefix's root, prefix‖NUL: schema 2).
func leaseKeys(t *testing.T, cli *clientv3.Client, prefix string) map[string]clientv3.LeaseID {
	t.Helper()
	p := prefix + "\x00leases/"
	r, err := cli.Get(context.Background(), p, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]clientv3.LeaseID{}
	for _, k := range r.Kvs {
		out[strings.TrimPrefix(string(k.Key), p)] = clientv3.LeaseID(k.Lease)
	}
	return out
}

func leaseOf(svc *engine.Service, id string, ttl time.Duration) state.Lease {
	now := svc.Now()
	return state.Lease{ID: id, PID: 1, Host: "h", Heartbeat: now, ExpiresAt: now.Add(ttl)}
}

func plan(t *testing.T, svc *engine.Service) string {
	t.Helper()
	out, err := svc.Plan(context.Background(), leaseSpec, "main", nil, engine.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return engine.FlowIDOf(out)
}

func owned(t *testing.T, what string, out engine.Outcome, err error) {
	t.Helper()
	if e := engine.AsError(err); e == nil || e.Type != engine.ErrTypeFlowOwned {
		t.Fatalf("%s: %v %v, want flow_owned", what, out, err)
	}
}

// TestRunnerLeaseIgnoresClockSkew: a live runner's lease is backed by an
// etcd lease, so no machine presumes it dead, however far ahead its clock
// is: none can take the flow or report into it, where a state-only lease
// would have been presumed expired by a machine more than the TTL ahead.
func TestRunnerLeaseIgnoresClockSkew(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	const ttl = 30 * time.Second
	a := machine(t, c, "/lease/", 0)
	id := plan(t, a)
	if err := a.Leases().Claim(ctx, id, leaseOf(a, "runner-a", ttl)); err != nil {
		t.Fatal(err)
	}
	for _, skew := range []time.Duration{ttl / 3, ttl + 10*time.Second, time.Hour, 1000 * time.Hour} {
		m := machine(t, c, "/lease/", skew)
		if err := m.Leases().Claim(ctx, id, leaseOf(m, "runner-m", ttl)); !errors.Is(err, engine.ErrLeaseHeld) {
			t.Fatalf("claim by a machine %v ahead: %v, want ErrLeaseHeld", skew, err)
		}
		out, err := m.StepDone(ctx, engine.StepReport{FlowID: id, StepID: "a", Result: map[string]any{}})
		owned(t, fmt.Sprintf("agent report from a machine %v ahead", skew), out, err)
		sums, err := m.Query().List(ctx, engine.ListFilter{})
		if err != nil || len(sums) != 1 || sums[0].Owner == nil || !sums[0].Owner.ExpiresAt.After(m.Now()) {
			t.Fatalf("listing on a machine %v ahead: %+v %v, want runner-a live", skew, sums, err)
		}
	}
	// The holder still writes.
	if _, err := a.StepDone(ctx, engine.StepReport{FlowID: id, StepID: "a", Result: map[string]any{}, ReportOptions: engine.ReportOptions{Actor: "runner-a"}}); err != nil {
		t.Fatalf("the holder's report: %v", err)
	}
	st, err := a.Query().Get(ctx, id)
	if err != nil || st.Owner == nil || st.Owner.ID != "runner-a" {
		t.Fatalf("owner %+v %v, want runner-a", st.Owner, err)
	}
}

// TestKilledRunnerLeaseFollowsEtcd kills a real runner (engine/run, waiting
// at a gate with a 6 s lease) in another process with kill -9 and watches
// its flow from two machines whose clocks are an hour ahead and an hour
// behind. While the runner lives, its heartbeats keep its etcd lease alive
// past the TTL. After the kill, the machine an hour ahead still sees the
// runner live and cannot take the flow until etcd expires the lease; the
// machine an hour behind sees it expired as soon as etcd did (its clock
// would have said live for another hour), and takes the flow over; the
// dead runner's lease can then no longer be renewed.
func TestKilledRunnerLeaseFollowsEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for an etcd lease to expire")
	}
	const ttl = 6 * time.Second
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	const prefix = "/killed/"
	cmd := exec.Command(os.Args[0], "-test.run=^TestLeaseRunnerProcess$")
	cmd.Env = append(os.Environ(), "STRATUM_LEASE_ENDPOINTS="+strings.Join(c.Endpoints, ","),
		"STRATUM_LEASE_PREFIX="+prefix, "STRATUM_LEASE_TTL="+ttl.String())
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer // the process's output but the LEASE line
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	started := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if f, ok := strings.CutPrefix(sc.Text(), "LEASE "); ok {
				started <- f
			} else {
				stderr.Write([]byte(sc.Text() + "\n"))
			}
		}
		close(started)
	}()
	var runnerLease string
	select {
	case l, ok := <-started:
		if !ok {
			t.Fatalf("the runner process exited: %s", stderr.String())
		}
		runnerLease = l
	case <-time.After(30 * time.Second):
		t.Fatalf("the runner process did not start: %s", stderr.String())
	}

	ahead := machine(t, c, prefix, time.Hour)
	behind := machine(t, c, prefix, -time.Hour)
	cli := rawClient(t, c)
	// The flow, once the runner waits at its gate.
	var id string
	for deadline := time.Now().Add(20 * time.Second); id == ""; {
		sums, err := behind.Query().List(ctx, engine.ListFilter{Status: state.StatusAwaitingGate})
		if err != nil {
			t.Fatal(err)
		}
		if len(sums) == 1 && sums[0].Owner != nil && sums[0].Owner.ID == runnerLease {
			id = sums[0].FlowID
		} else if time.Now().After(deadline) {
			t.Fatalf("no flow of runner %s awaiting its gate: %+v; runner: %s", runnerLease, sums, stderr.String())
		} else {
			time.Sleep(50 * time.Millisecond)
		}
	}
	key := runnerLease + "\x00" + id
	live := func(svc *engine.Service) bool {
		t.Helper()
		sums, err := svc.Query().List(ctx, engine.ListFilter{})
		if err != nil || len(sums) != 1 {
			t.Fatalf("list: %+v %v", sums, err)
		}
		st, err := svc.Query().Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		now := svc.Now()
		byList, byGet := !sums[0].Stalled(now), st.Owner != nil && st.Owner.ExpiresAt.After(now)
		if byList != byGet {
			t.Fatalf("the listing says live=%v, the state live=%v (owner %+v, summary owner %+v)", byList, byGet, st.Owner, sums[0].Owner)
		}
		return byGet
	}

	// Alive for longer than the TTL: the heartbeats keep the etcd lease.
	first := leaseKeys(t, cli, prefix)[key]
	if first == 0 {
		t.Fatalf("no lease key %q: %v", key, leaseKeys(t, cli, prefix))
	}
	for end := time.Now().Add(ttl + ttl/2); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		if !live(ahead) || !live(behind) {
			t.Fatal("a live runner was seen expired")
		}
	}
	if got := leaseKeys(t, cli, prefix)[key]; got != first {
		t.Fatalf("etcd lease %x after %v of heartbeats, was %x: want it kept alive", got, ttl+ttl/2, first)
	}

	if err := cmd.Process.Kill(); err != nil { // kill -9
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed = true
	killedAt := time.Now()

	// An hour ahead, the runner's own ExpiresAt is long past, but etcd
	// still holds the lease: live, and the flow cannot be taken.
	if !live(ahead) {
		t.Fatal("just after the kill, a machine an hour ahead sees the runner expired: expiry followed its clock, not etcd")
	}
	if err := ahead.Leases().Claim(ctx, id, leaseOf(ahead, "runner-ahead", 30*time.Second)); !errors.Is(err, engine.ErrLeaseHeld) {
		t.Fatalf("claim an hour ahead just after the kill: %v, want ErrLeaseHeld", err)
	}

	// An hour behind, the runner's ExpiresAt is an hour away: it sees the
	// runner expired when etcd expires the lease.
	for {
		// In this order: once expired for one, expired for every later read.
		aheadLive, behindLive := live(ahead), live(behind)
		if !behindLive {
			break
		}
		if !aheadLive {
			t.Fatal("a machine an hour ahead saw the runner expired, then one an hour behind saw it live: expiry followed the clocks")
		}
		if time.Since(killedAt) > ttl+10*time.Second {
			t.Fatalf("the runner was killed %v ago with a %v lease and is still live", time.Since(killedAt), ttl)
		}
		time.Sleep(100 * time.Millisecond)
	}
	gone := time.Since(killedAt)
	t.Logf("the killed runner's lease expired %v after the kill", gone)
	if gone < ttl/3 {
		t.Errorf("the lease expired %v after the kill; the last heartbeat was at most %v before it, so at least %v should have remained", gone, ttl/3, ttl-ttl/3)
	}
	if _, ok := leaseKeys(t, cli, prefix)[key]; ok {
		t.Fatal("the runner is seen expired but its lease key exists")
	}
	if live(ahead) {
		t.Fatal("expired for one machine, live for another")
	}
	st, err := behind.Query().Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if st.Owner == nil || st.Owner.ID != runnerLease || !st.Owner.ExpiresAt.Equal(etcdstore.ExpiredAt) {
		t.Fatalf("owner of the dead runner %+v, want %s expiring at %v", st.Owner, runnerLease, etcdstore.ExpiredAt)
	}

	// Takeover after the expiry, by the machine an hour behind.
	if err := behind.Leases().TakeOver(ctx, id, runnerLease, leaseOf(behind, "runner-behind", 30*time.Second)); err != nil {
		t.Fatalf("takeover after the expiry: %v", err)
	}
	if !live(ahead) || !live(behind) {
		t.Fatal("the new holder is not live")
	}
	if err := ahead.Leases().Claim(ctx, id, state.Lease{ID: runnerLease, ExpiresAt: ahead.Now().Add(ttl)}); !errors.Is(err, engine.ErrLeaseHeld) {
		t.Fatalf("renewing the dead runner's lease after the takeover: %v, want ErrLeaseHeld", err)
	}
	st, err = ahead.Query().Get(ctx, id)
	if err != nil || st.Owner == nil || st.Owner.ID != "runner-behind" || st.Driver != state.DriverRunner {
		t.Fatalf("after the takeover: owner %+v driver %q %v", st.Owner, st.Driver, err)
	}
	keys := leaseKeys(t, cli, prefix)
	if _, ok := keys["runner-behind\x00"+id]; !ok || len(keys) != 1 {
		t.Fatalf("lease keys after the takeover: %v", keys)
	}
}

// syncBuffer is a strings.Builder safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestLeaseRunnerProcess is the runner process of
// TestKilledRunnerLeaseFollowsEtcd (it runs only there): a real run of a
// flow that waits at a gate for a decision that never comes, heartbeating.
func TestLeaseRunnerProcess(t *testing.T) {
	eps := os.Getenv("STRATUM_LEASE_ENDPOINTS")
	if eps == "" {
		t.Skip("the runner process of TestKilledRunnerLeaseFollowsEtcd")
	}
	ttl, err := time.ParseDuration(os.Getenv("STRATUM_LEASE_TTL"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := etcdstore.Open(context.Background(), etcdstore.Options{Endpoints: strings.Split(eps, ","), Prefix: os.Getenv("STRATUM_LEASE_PREFIX")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sp, ds := specs.Parse("gated.yaml", []byte(`version: "0.2"
functions:
  approval:
    mode: gate
flows:
  main:
    input: {}
    steps:
      - id: work
        intent: "work"
        run: "echo '{}'"
      - id: review
        function: approval
        depends_on: [work]
        on_approve: ~
        on_kill: ~
        on_revise: work
`), exprlang.Compile)

	if ds.HasErrors() {
		t.Fatal(ds.Error())
	}
	r := run.New(run.Options{Service: &engine.Service{ParseSpec: exprlang.ParseSpec, Store: s}, LeaseTTL: ttl, Gates: review.Policy{OnGate: review.OnGateWait}})
	fmt.Printf("LEASE %s\n", r.LeaseID())
	out, err := r.Start(context.Background(), sp, "main", nil)
	t.Fatalf("the run ended: %+v %v", out, err)
}

// TestTakeoverCannotRaceExpiry: a transaction that saw the owner live
// commits only if the owner's lease key still exists at the commit; when
// etcd expires the lease in between, the transaction is retried and sees
// the owner expired.
func TestTakeoverCannotRaceExpiry(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	const prefix = "/race/"
	a := machine(t, c, prefix, 0)
	cli := rawClient(t, c)
	id := plan(t, a)
	if err := a.Leases().Claim(ctx, id, leaseOf(a, "runner-a", 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	etcdLease := leaseKeys(t, cli, prefix)["runner-a\x00"+id]
	if etcdLease == 0 {
		t.Fatal("no lease key")
	}
	b := machine(t, c, prefix, 0)
	var seen []bool
	err := b.Store.Update(ctx, func(tx engine.Tx) error {
		st, err := tx.Get(id)
		if err != nil {
			return err
		}
		live := st.Owner != nil && st.Owner.ExpiresAt.After(time.Now())
		seen = append(seen, live)
		if len(seen) == 1 {
			// etcd expires the lease after this transaction's snapshot.
			if _, err := cli.Revoke(ctx, etcdLease); err != nil {
				t.Fatal(err)
			}
		}
		st.Inputs = map[string]any{"owner_live": live}
		return storetest.Put(tx, st)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || !seen[0] || seen[1] {
		t.Fatalf("the owner was seen live=%v by successive attempts, want [true false]: a write that depended on the lease committed after it expired", seen)
	}
	st, err := a.Query().Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if st.Inputs["owner_live"] != false || st.Owner == nil || !st.Owner.ExpiresAt.Equal(etcdstore.ExpiredAt) {
		t.Fatalf("committed %v with owner %+v", st.Inputs, st.Owner)
	}
}

// TestReleaseRevokes: a runner lease owning two flows has one etcd lease;
// releasing one flow deletes its key and keeps the lease for the other;
// releasing the last revokes the etcd lease at once (not after the TTL). An
// owner already expired when it is written is not backed at all.
func TestReleaseRevokes(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	const prefix = "/release/"
	svc := machine(t, c, prefix, 0)
	cli := rawClient(t, c)
	f1, f2 := plan(t, svc), plan(t, svc)
	for _, id := range []string{f1, f2} {
		if err := svc.Leases().Claim(ctx, id, leaseOf(svc, "runner-r", time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	keys := leaseKeys(t, cli, prefix)
	e := keys["runner-r\x00"+f1]
	if len(keys) != 2 || e == 0 || keys["runner-r\x00"+f2] != e {
		t.Fatalf("lease keys %v: want one per flow on one etcd lease", keys)
	}
	ttlOf := func() int64 {
		t.Helper()
		r, err := cli.TimeToLive(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		return r.TTL
	}
	if got := ttlOf(); got < 3500 || got > 3600 {
		t.Fatalf("etcd lease TTL %d s for a lease of an hour", got)
	}
	if err := svc.Leases().Release(ctx, f1, "runner-r"); err != nil {
		t.Fatal(err)
	}
	if keys := leaseKeys(t, cli, prefix); len(keys) != 1 || keys["runner-r\x00"+f2] != e {
		t.Fatalf("lease keys after releasing %s: %v", f1, keys)
	}
	if ttlOf() <= 0 {
		t.Fatal("the etcd lease was revoked while the runner still owns a flow")
	}
	if st, err := svc.Query().Get(ctx, f2); err != nil || st.Owner == nil || !st.Owner.ExpiresAt.After(time.Now()) {
		t.Fatalf("the other flow's owner %+v %v, want live", st.Owner, err)
	}
	if err := svc.Leases().Release(ctx, f2, "runner-r"); err != nil {
		t.Fatal(err)
	}
	if keys := leaseKeys(t, cli, prefix); len(keys) != 0 {
		t.Fatalf("lease keys after releasing both: %v", keys)
	}
	if got := ttlOf(); got != -1 {
		t.Fatalf("etcd lease TTL %d after the last release, want -1 (revoked)", got)
	}
	for _, id := range []string{f1, f2} {
		if st, err := svc.Query().Get(ctx, id); err != nil || st.Owner != nil {
			t.Fatalf("owner of %s after the release: %+v %v", id, st.Owner, err)
		}
	}

	// An owner written already expired has no etcd lease: it stays as written.
	stale := state.Lease{ID: "runner-stale", ExpiresAt: time.Now().Add(-time.Minute)}
	if err := svc.Store.Update(ctx, func(tx engine.Tx) error {
		st, err := tx.Get(f1)
		if err != nil {
			return err
		}
		st.Owner = &stale
		return storetest.Put(tx, st)
	}); err != nil {
		t.Fatal(err)
	}
	if keys := leaseKeys(t, cli, prefix); len(keys) != 0 {
		t.Fatalf("lease keys for an expired owner: %v", keys)
	}
	if st, err := svc.Query().Get(ctx, f1); err != nil || st.Owner == nil || !st.Owner.ExpiresAt.Equal(stale.ExpiresAt) {
		t.Fatalf("expired owner read back as %+v %v", st.Owner, err)
	}
}

// TestLostEtcdLeaseIsGrantedAgain: when the etcd lease a runner's store
// keeps alive is gone (expired while the process was stopped, or revoked
// by an operator), the runner's flows are seen expired at once, and its
// next heartbeat (a Claim with the same lease id, allowed while nobody
// took the flow) grants a new etcd lease — also when the heartbeat's
// ExpiresAt is within what the store believed the old lease to last, so
// the commit itself finds the lease gone and is retried.
func TestLostEtcdLeaseIsGrantedAgain(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	const prefix = "/regrant/"
	svc := machine(t, c, prefix, 0)
	cli := rawClient(t, c)
	id := plan(t, svc)
	if err := svc.Leases().Claim(ctx, id, leaseOf(svc, "runner-r", time.Hour)); err != nil {
		t.Fatal(err)
	}
	key := "runner-r\x00" + id
	old := leaseKeys(t, cli, prefix)[key]
	if _, err := cli.Revoke(ctx, old); err != nil {
		t.Fatal(err)
	}
	if st, err := svc.Query().Get(ctx, id); err != nil || st.Owner == nil || !st.Owner.ExpiresAt.Equal(etcdstore.ExpiredAt) {
		t.Fatalf("owner after its etcd lease was revoked: %+v %v, want expired", st.Owner, err)
	}
	if err := svc.Leases().Claim(ctx, id, leaseOf(svc, "runner-r", 30*time.Minute)); err != nil {
		t.Fatalf("heartbeat after the etcd lease was lost: %v", err)
	}
	now := leaseKeys(t, cli, prefix)[key]
	if now == 0 || now == old {
		t.Fatalf("etcd lease after the heartbeat %x (was %x): want a new one", now, old)
	}
	if r, err := cli.TimeToLive(ctx, now); err != nil || r.TTL < 1700 || r.TTL > 1800 {
		t.Fatalf("new etcd lease TTL %+v %v, want about 30 min", r, err)
	}
	if st, err := svc.Query().Get(ctx, id); err != nil || st.Owner == nil || !st.Owner.ExpiresAt.After(time.Now()) {
		t.Fatalf("owner after the heartbeat: %+v %v, want live", st.Owner, err)
	}
}
