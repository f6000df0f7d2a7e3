package stratum

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/store/shared"
)

// countingStore counts the write transactions (durable commits) of a
// store.
type countingStore struct {
	*shared.Opened
	updates   atomic.Int64
	flowReads atomic.Int64 // flows read in read-only transactions
}

func (c *countingStore) Update(ctx context.Context, fn func(tx engine.Tx) error) error {
	c.updates.Add(1)
	return c.Opened.Update(ctx, fn)
}

func (c *countingStore) View(ctx context.Context, fn func(tx engine.Tx) error) error {
	return c.Opened.View(ctx, func(tx engine.Tx) error { return fn(countingTx{Tx: tx, c: c}) })
}

// countingTx counts the flows a read-only transaction reads.
type countingTx struct {
	engine.Tx
	c *countingStore
}

func (t countingTx) Get(flowID string) (*state.FlowState, error) {
	t.c.flowReads.Add(1)
	return t.Tx.Get(flowID)
}

// openShared opens the store a stratum command would open (a bbolt file in
// the test's STRATUM_HOME), as a program would with shared.OpenDefault.
func openShared(t *testing.T) *countingStore {
	t.Helper()
	st, err := shared.OpenDefault(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &countingStore{Opened: st}
}

// Rule 15: 20 concurrent Calls in one stored flow never fail on a version
// conflict (writes for one flow are serialised in the program), each is one
// trace entry with its attempts, tokens and cost, and each costs at most
// one durable commit.
func TestConcurrentCallsInOneStoredFlow(t *testing.T) {
	fake := newFake(t, `{"label": "positive", "confidence": 0.9}`)
	t.Setenv("STRATUM_HOME", t.TempDir())
	t.Chdir(t.TempDir())
	st := openShared(t)
	_, ctx := fake.runtime(t, Options{Store: st})
	fn := classify(t, Spec[textIn, sentiment]{})
	const n = 20
	flow := NewFlow("fan", Budget{}, func(ctx context.Context, _ struct{}) (string, error) {
		branches := make([]Branch[sentiment], n)
		for i := range branches {
			branches[i] = func(ctx context.Context) (sentiment, error) { return fn.Call(ctx, textIn{Text: "great"}) }
		}
		_, err := All(ctx, branches...)
		return FlowID(ctx), err
	})
	before := st.updates.Load()
	id, err := flow.Run(ctx, struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	commits := st.updates.Load() - before
	svc := &engine.Service{Store: st}
	fs, err := svc.Query().Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if fs.Driver != state.DriverLibrary || fs.Status != state.StatusComplete || fs.Library.Calls != n || len(fs.Trace) != n || len(fs.Records) != n {
		t.Fatalf("flow %s: driver %s status %s calls %d trace %d records %d", id, fs.Driver, fs.Status, fs.Library.Calls, len(fs.Trace), len(fs.Records))
	}
	if fs.BudgetState == nil || fs.BudgetState.SpentTokens != n*110 {
		t.Errorf("ledger %+v, want %d tokens", fs.BudgetState, n*110)
	}
	evs, _ := svc.Query().FlowEvents(context.Background(), id)
	calls := 0
	for _, e := range evs {
		if e.Type == engine.EventTrace {
			calls++
			if d, _ := e.Data.(engine.Trace); d.Trace == nil || d.Trace.Function != "classify" || d.Tokens != 110 {
				t.Errorf("trace event %+v", d)
			}
		}
	}
	if calls != n {
		t.Errorf("%d trace events, want %d", calls, n)
	}
	// start + one per call + finish
	if commits > n+2 {
		t.Errorf("%d commits for %d calls, want at most %d", commits, n, n+2)
	}
	t.Logf("%d calls: %d durable commits (start and finish included)", n, commits)
}

// Rule 15: a program's flow holds a lease while it runs, so once the
// program died (no finishFlow, no heartbeat) the flow shows as stalled;
// a finished flow drops it.
func TestStoredFlowLeaseMakesADeadProgramStalled(t *testing.T) {
	t.Setenv("STRATUM_HOME", t.TempDir())
	t.Chdir(t.TempDir())
	st := openShared(t)
	rt, err := New(Options{Store: st, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	ctx := context.Background()
	id, err := rt.recorder.startFlow(ctx, "crashy", map[string]any{"n": 1})
	if err != nil {
		t.Fatal(err)
	}
	svc := &engine.Service{Store: st}
	sums, _ := svc.Query().List(ctx, engine.ListFilter{})
	if len(sums) != 1 || sums[0].Driver != state.DriverLibrary || sums[0].Owner == nil {
		t.Fatalf("summary %+v", sums)
	}
	now := time.Now()
	if sums[0].Stalled(now) {
		t.Error("a running program's flow is stalled")
	}
	if !sums[0].Stalled(now.Add(leaseTTL + time.Second)) {
		t.Error("a flow whose program stopped renewing its lease is not stalled")
	}
	if err := rt.recorder.finishFlow(ctx, id, "done", nil); err != nil {
		t.Fatal(err)
	}
	sums, _ = svc.Query().List(ctx, engine.ListFilter{})
	if sums[0].Status != state.StatusComplete || sums[0].Owner != nil || sums[0].Stalled(now.Add(time.Hour)) {
		t.Errorf("finished flow %+v", sums[0])
	}
}

// notAStore has the methods of Store but is no store stratum opened.
type notAStore struct{}

func (notAStore) Name() string { return "elsewhere" }
func (notAStore) Close() error { return nil }

// Options.Store takes the stores of store/shared; any other value is
// refused by New with an error that says where a store comes from.
func TestOptionsStoreRefusesOtherValues(t *testing.T) {
	_, err := New(Options{Store: notAStore{}, Getenv: func(string) string { return "" }})
	if err == nil || !strings.Contains(err.Error(), "store/shared") {
		t.Fatalf("New with a Store that is not one: %v", err)
	}
}
