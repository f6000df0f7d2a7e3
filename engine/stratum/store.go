package stratum

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
)

// This file is the library's side of the shared store: with Options.Store
// set, every Flow.Run is a flow of the store (driver "library"), every Call
// a trace entry of it, every AwaitHuman a review in it (engine/library.go).

// Store is where a Runtime persists its flows, calls and reviews: the
// shared store that `stratum tui`, `stratum query` and `stratum gate` read.
// Open it with OpenDefault of package
// github.com/stratum-go/stratum/store/shared (the store a stratum command
// started in the same directory would open: STRATUM_STORE, the config
// files' store:, else $STRATUM_HOME/stratum.db) or with its Open, pass it
// as Options.Store, and Close it when the program is done: the Runtime
// does not. New accepts only the stores of stratum's own store packages
// and refuses any other value with an error.
//
// The default store is a bbolt file, and a program that opens it links no
// etcd client. Team mode (an etcd:// store shared by many machines) is one
// more import in the program:
//
//	import _ "github.com/stratum-go/stratum/store/team"
type Store interface {
	// Name says which store it is: "bbolt PATH" or
	// "etcd etcd://HOSTS/PREFIX".
	Name() string
	// Close releases the store (an etcd connection).
	Close() error
}

// leaseTTL is how long a flow's lease lives without a heartbeat; the
// program renews it every leaseTTL/3 while the flow runs, so a flow whose
// program died shows as stalled within leaseTTL (as a runner's does).
const leaseTTL = 30 * time.Second

// storeRecorder is the flowRecorder over a Store. Writes for one flow are
// serialised here (one writer per flow in the program: calls, reviews,
// heartbeats), so concurrent Calls of one flow never race each other for
// the flow's version; each Call is one commit.
type storeRecorder struct {
	svc *engine.Service // the store's events, gate decisions and deadlines
	lib *engine.Library // the program's flows, calls and reviews
	now func() time.Time

	mu    sync.Mutex
	flows map[string]*flowWriter
}

// flowWriter serialises the writes of one flow and keeps its lease alive.
type flowWriter struct {
	mu    sync.Mutex // held by each write of the flow
	lease state.Lease
	stop  context.CancelFunc
	done  chan struct{}
}

// attachStore is called by New when Options.Store is set: flows, calls and
// reviews go to the store.
func (rt *Runtime) attachStore(st engine.Store) {
	rt.store = st
	svc := &engine.Service{Store: st, Now: func() time.Time { return rt.opts.Now().UTC() }}
	rec := &storeRecorder{svc: svc, lib: engine.NewLibrary(svc), now: rt.opts.Now, flows: map[string]*flowWriter{}}
	rt.recorder = rec
	rt.reviews.store = rec
}

var _ flowRecorder = (*storeRecorder)(nil)

func (s *storeRecorder) freshLease(id string) state.Lease {
	host, _ := os.Hostname()
	now := s.now().UTC()
	return state.Lease{ID: id, PID: os.Getpid(), Host: host, Heartbeat: now, ExpiresAt: now.Add(leaseTTL)}
}

// writer returns the flow's writer (nil for a flow this program did not
// start, such as a review's flow decided from here).
func (s *storeRecorder) writer(flowID string) *flowWriter {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flows[flowID]
}

// write runs fn as the flow's one writer.
func (s *storeRecorder) write(flowID string, fn func() error) error {
	if w := s.writer(flowID); w != nil {
		w.mu.Lock()
		defer w.mu.Unlock()
	}
	return fn()
}

func (s *storeRecorder) startFlow(ctx context.Context, name string, input any) (string, error) {
	lease := s.freshLease("lib-" + engine.NewUUID())
	opt := engine.LibraryFlowOptions{Name: name, Inputs: inputsOf(input), Owner: &lease}
	if p := flowFrom(ctx); p != nil {
		opt.ParentFlowID = p.id // a Flow.Run inside another is its child
	}
	id, err := s.lib.StartFlow(ctx, opt)
	if err != nil {
		return "", fmt.Errorf("stratum: start flow %s: %w", name, err)
	}
	hctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	w := &flowWriter{lease: lease, stop: stop, done: make(chan struct{})}
	s.mu.Lock()
	s.flows[id] = w
	s.mu.Unlock()
	go s.heartbeat(hctx, id, w)
	return id, nil
}

// heartbeat renews the flow's lease every leaseTTL/3 until the flow ends.
func (s *storeRecorder) heartbeat(ctx context.Context, flowID string, w *flowWriter) {
	defer close(w.done)
	t := time.NewTicker(leaseTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.mu.Lock()
			l := s.freshLease(w.lease.ID)
			if err := s.lib.RenewLease(ctx, flowID, &l); err == nil {
				w.lease = l
			}
			w.mu.Unlock()
		}
	}
}

func (s *storeRecorder) recordCall(ctx context.Context, flowID string, rec CallTrace) error {
	c := libraryCall(rec)
	return s.write(flowID, func() error {
		// A call that ended is recorded even when its context was cancelled.
		return s.lib.RecordCall(context.WithoutCancel(ctx), flowID, c)
	})
}

func (s *storeRecorder) finishFlow(ctx context.Context, flowID string, output any, failure error) error {
	err := s.write(flowID, func() error {
		return s.lib.FinishFlow(context.WithoutCancel(ctx), flowID, jsonValue(output), failure)
	})
	s.mu.Lock()
	w := s.flows[flowID]
	delete(s.flows, flowID)
	s.mu.Unlock()
	if w != nil {
		w.stop()
		<-w.done
	}
	return err
}

// libraryCall is a Call's trace record as the engine records it: a step
// record, the spend, a trace record and a trace event.
func libraryCall(rec CallTrace) engine.LibraryCall {
	tokens := rec.InputTokens + rec.OutputTokens
	var reasons []string
	for _, v := range rec.Violations {
		reasons = append(reasons, v...)
	}
	if reasons == nil {
		reasons = []string{}
	}
	inputs, _ := jsonValue(rec.Inputs).(map[string]any)
	if inputs == nil && rec.Inputs != nil {
		inputs = map[string]any{"input": jsonValue(rec.Inputs)}
	}
	tr := &state.TraceRecord{
		Function: rec.Function, Model: rec.Model, Inputs: inputs, OpaqueInputs: rec.OpaqueInputs,
		CompiledPromptHash: rec.PromptHash, ContractHash: rec.ContractHash, Attempts: rec.Attempts,
		Output: jsonValue(rec.Output), DurationMS: rec.Duration.Milliseconds(), CostUSD: rec.CostUSD,
		CacheHit: rec.CacheHit, RetryReasons: reasons, Attempt: rec.Attempts,
		Usage: &state.Usage{InputTokens: rec.InputTokens, OutputTokens: rec.OutputTokens},
	}
	if rec.FlowID != "" {
		id := rec.FlowID
		tr.FlowID = &id
	}
	callDetail(tr, &rec)
	data := map[string]any{}
	if rec.Error != "" {
		data["error"] = rec.Error
	}
	if rec.CacheHit {
		data["cache_hit"] = true
	}
	return engine.LibraryCall{Function: rec.Function, Attempts: rec.Attempts, DurationMS: rec.Duration.Milliseconds(),
		Tokens: tokens, CostUSD: rec.CostUSD, CacheHit: rec.CacheHit, Trace: tr, Data: data}
}

// inputsOf is a flow's input as the store keeps it: a JSON object, or
// {"input": value} for anything else.
func inputsOf(input any) map[string]any {
	v := jsonValue(input)
	if m, ok := v.(map[string]any); ok {
		return m
	}
	if v == nil {
		return map[string]any{}
	}
	return map[string]any{"input": v}
}

// jsonValue is v as JSON decodes it (maps, slices, float64 …), so what the
// store keeps is plain JSON; a value JSON cannot encode is kept as its
// text.
func jsonValue(v any) any {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	out, err := decodeExact(b)
	if err != nil {
		return string(b)
	}
	return out
}
