package stratum

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	sjson "github.com/segmentio/encoding/json"
	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/internal/infer"
	"github.com/stratum-go/stratum/engine/internal/llm"
	"github.com/stratum-go/stratum/specs"
)

// traceLimit is the number of records a Runtime keeps for Trace (the
// oldest are dropped); Options.OnCall sees every one. Unexported: a
// program that needs more keeps them itself from OnCall.
const traceLimit = 10000

// callState is one Call in progress: its envelope and what its trace
// record accumulates over attempts, samples and iterations.
type callState struct {
	rt    *Runtime
	flow  *flowRun
	env   *envelope
	start time.Time

	mu    sync.Mutex
	rec   CallTrace
	cost  float64
	known bool

	stream *streamHook // Stream's, nil for Call
	media  []llm.Media // the input's media parts
}

// begin starts a Call of function fn with its own budget b.
func begin(ctx context.Context, fn string, b Budget) (*callState, error) {
	rt, err := runtimeFrom(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: no runtime: %v", ErrStratum, fn, err)
	}
	c := &callState{rt: rt, flow: flowFrom(ctx), start: rt.opts.Now(), known: true}
	var parent *envelope
	if c.flow != nil {
		parent = c.flow.budget
		c.rec.FlowID = c.flow.id
	}
	c.env = newEnvelope(b, parent, c.start, "the call")
	c.rec.Function = fn
	return c, nil
}

// add charges a loop's result to the record.
func (c *callState) add(r infer.LoopResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// A loop's failed attempts are its first ones (all of them when it
	// was exhausted), numbered here over the whole call.
	for i := range r.Violations {
		c.rec.failedAt = append(c.rec.failedAt, c.rec.Attempts+i+1)
	}
	c.rec.Attempts += r.Attempts
	c.rec.Violations = append(c.rec.Violations, r.Violations...)
	c.rec.InputTokens += r.Usage.InputTokens + r.Usage.CacheReadTokens + r.Usage.CacheWriteTokens
	c.rec.OutputTokens += r.Usage.OutputTokens + r.Usage.ReasoningTokens
	if r.Attempts > 0 {
		if r.CostUSD == nil {
			c.known = false
		} else {
			c.cost += *r.CostUSD
		}
	}
	if r.Model != "" {
		c.rec.Model, c.rec.PromptHash = r.Model, r.PromptHash
	}
}

// finish completes the record and hands it to the Runtime's trace, the
// OnCall callback and, inside a flow, the flow recorder.
func (c *callState) finish(ctx context.Context, output any, err error) {
	c.mu.Lock()
	rec := c.rec
	c.mu.Unlock()
	rec.Duration = c.rt.opts.Now().Sub(c.start)
	rec.Streamed = c.stream != nil && rec.Attempts > 0
	if c.known {
		cost := c.cost
		rec.CostUSD = &cost
	}
	if err != nil {
		rec.Error = err.Error()
	} else {
		rec.Output = plainJSON(output)
	}
	rt := c.rt
	rt.mu.Lock()
	if len(rt.trace) >= traceLimit {
		rt.trace = append(rt.trace[:0], rt.trace[1:]...)
	}
	rt.trace = append(rt.trace, rec)
	rt.mu.Unlock()
	if rt.opts.OnCall != nil {
		rt.opts.OnCall(rec)
	}
	if c.flow != nil {
		if err := rt.recorder.recordCall(context.WithoutCancel(ctx), c.flow.id, rec); err != nil {
			rt.warnf("recording call %s of flow %s: %v", rec.Function, c.flow.id, err)
		}
	}
}

// unpriced refuses a call of fn whose envelope bounds USD while its model
// has no known price (the router's rule, as `stratum run` applies it to a
// flow before it starts): such a call spends at an unknown cost, which is
// charged nothing, so the budget would never be enforced. nil when no USD
// budget covers the call or its model is priced.
func (c *callState) unpriced(fn, model string) error {
	scope := c.env.usdScope()
	if scope == "" {
		return nil
	}
	full, priced := c.rt.exec.PriceOf(model)
	if priced {
		return nil
	}
	return fmt.Errorf("%w: %s: a USD budget (%s) covers this call, but model %s has no known price, so the budget would not be enforced; %s, or drop USD from the Budget (Time and Tokens are enforced for every model)",
		ErrStratum, fn, scope, full, infer.PriceHint)
}

// plainJSON is v as JSON values, numbers as json.Number (so the trace
// holds no reference to the program's data, and an integer above 2^53
// keeps its digits); v itself when it does not encode.
func plainJSON(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	out, err := decodeExact(b)
	if err != nil {
		return v
	}
	return out
}

// decodeExact decodes JSON with its numbers as json.Number, the digits as
// written.
func decodeExact(b []byte) (any, error) { return infer.DecodeExact(b) }

// Call runs the function on in: the preconditions, the cache, then
// the infer loop (or the quorum, the refine loop, or test-mode sampling),
// and returns the decoded output. Errors are *PreconditionError,
// *ParseError, *PostconditionError, *BudgetError, *ConsensusError,
// *ConvergenceError, *StabilityError, ctx's error, or a configuration
// error (no model, no key, replay miss) matching ErrStratum.
func (f *Fn[In, Out]) Call(ctx context.Context, in In) (Out, error) {
	return f.callWith(ctx, in, nil)
}

// callWith is Call, streamed through hook when it is set.
func (f *Fn[In, Out]) callWith(ctx context.Context, in In, hook *streamHook) (Out, error) {
	var zero Out
	if f == nil {
		return zero, fmt.Errorf("%w: Call on a nil *Fn (define it with NewInfer)", ErrStratum)
	}
	c, err := begin(ctx, f.name, f.spec.Budget)
	if err != nil {
		return zero, err
	}
	c.stream = hook
	out, err := f.call(ctx, c, in)
	if err != nil {
		c.finish(ctx, nil, err)
		return zero, err
	}
	c.finish(ctx, out, nil)
	return out, nil
}

// call is Call after its record is started.
func (f *Fn[In, Out]) call(ctx context.Context, c *callState, in In) (Out, error) {
	var zero Out
	if err := c.unpriced(f.name, f.spec.Model); err != nil {
		return zero, err
	}
	binds, raw, err := f.bindings(in)
	if err != nil {
		return zero, err
	}
	c.rec.Inputs, c.rec.ContractHash = f.traceInputs(raw), f.hash
	if c.media, err = f.mediaOf(in); err != nil {
		return zero, err
	}
	for _, b := range binds {
		if b.Opaque {
			c.rec.OpaqueInputs = append(c.rec.OpaqueInputs, b.Name)
		}
	}
	var failed []string
	for _, g := range f.spec.Given {
		if !g.holds(in) {
			failed = append(failed, g.desc)
		}
	}
	if len(failed) > 0 {
		return zero, &PreconditionError{Function: f.name, Violations: failed}
	}
	cache := f.cacheFor(c, raw)
	if out, ok := cacheGet(ctx, cache, f); ok {
		c.rec.CacheHit = true
		return out, nil
	}
	var out Out
	switch {
	case f.spec.Quorum > 1:
		out, err = f.quorum(ctx, c, binds)
	case c.rt.opts.TestMode && f.spec.Stable:
		var p Probabilistic[Out]
		if p, err = f.sample(ctx, c, binds, c.rt.opts.SampleN); err == nil {
			out, err = p.AssertStable(StableThreshold)
		}
	default:
		out, err = f.refined(ctx, c, binds)
	}
	if err == nil {
		cache.put(ctx, out)
	}
	return out, err
}

// refined runs the refine loop when the Spec has one, else one infer loop.
func (f *Fn[In, Out]) refined(ctx context.Context, c *callState, binds []infer.Binding) (Out, error) {
	r := f.spec.Refine
	if r == nil {
		return f.once(ctx, c, binds, nil)
	}
	max := r.MaxIterations
	if max <= 0 {
		max = DefaultMaxIterations
	}
	ce := &ConvergenceError{Function: f.name}
	var tail []string
	for i := 1; i <= max; i++ {
		out, err := f.once(ctx, c, binds, tail)
		if err != nil {
			return out, err
		}
		ce.Iterations = i
		ce.Outputs = append(ce.Outputs, plainJSON(out))
		done, fb, err := f.judge(out)
		if err != nil {
			return out, err
		}
		if done {
			return out, nil
		}
		ce.Feedback = append(ce.Feedback, fb)
		tail = []string{"Previous output had the following issues: " + fb, "Fix these and regenerate."}
	}
	var zero Out
	return zero, ce
}

// judge runs the refine loop's Until and Feedback, a panic in either
// being an error.
func (f *Fn[In, Out]) judge(out Out) (done bool, feedback string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %s: refine panicked: %v", ErrStratum, f.name, r)
		}
	}()
	r := f.spec.Refine
	if r.Until == nil || r.Until(out) {
		return true, "", nil
	}
	feedback = "the output does not meet the goal"
	if r.Feedback != nil {
		feedback = r.Feedback(out)
	}
	return false, feedback, nil
}

// once runs one infer loop (Retries+1 attempts at most). tail ends the
// prompt (the refine feedback).
func (f *Fn[In, Out]) once(ctx context.Context, c *callState, binds []infer.Binding, tail []string) (Out, error) {
	var got, zero Out
	inputs, _ := c.rec.Inputs.(map[string]any)
	media := c.media
	req := infer.LoopRequest{
		AttemptRequest: infer.AttemptRequest{
			Function: f.name, Models: f.models,
			Parts:  infer.PromptParts{Intent: f.spec.Intent, Context: f.spec.Context, Inputs: binds, Tail: tail, Examples: f.examples},
			Output: infer.Output{Schema: f.schema, Hash: f.hash, ExactNumbers: true}, Inputs: inputs,
			Temperature: f.spec.Temperature, MaxTokens: f.spec.MaxTokens, FlowID: c.rec.FlowID, Tools: f.toolLoop(c), Media: media,
		},
		Retries: f.retries,
		Check: func(v any) ([]string, bool) {
			out, violations, parse := f.check(v)
			got = out
			return violations, parse
		},
		Budget: c.env.view,
		Charge: func(a infer.AttemptResult) {
			u := a.Usage
			c.env.charge(a.CostUSD, u.InputTokens+u.OutputTokens+u.CacheReadTokens+u.CacheWriteTokens+u.ReasoningTokens)
		},
		Exporter: c.rt.exporter,
	}
	if c.stream != nil {
		req.OnDelta, req.OnFailed = c.stream.delta, c.stream.failed
	}
	res, err := c.rt.exec.Loop(ctx, req)
	c.add(res)
	if err != nil {
		return zero, f.loopError(c, err)
	}
	return got, nil
}

// check validates an answer: the schema, the decoding into Out (both
// parse failures), then every postcondition in order.
func (f *Fn[In, Out]) check(v any) (Out, []string, bool) {
	var out Out
	if vs := f.contract.Check(v); len(vs) > 0 {
		return out, vs, true
	}
	if err := decodeAs(v, &out); err != nil {
		return out, []string{"the answer does not decode: " + err.Error()}, true
	}
	return out, f.failedEnsures(out), false
}

// decodeAs decodes v (JSON values: a checked answer) into out as
// encoding/json decodes v's encoding: with github.com/segmentio/encoding/json
// (a drop-in replacement: the same values, a fraction of the allocations;
// TestDecodeAsEncodingJSON), and with encoding/json itself when that fails,
// for its result and its error.
func decodeAs[Out any](v any, out *Out) error {
	if b, err := sjson.Marshal(v); err == nil {
		if sjson.Unmarshal(b, out) == nil {
			return nil
		}
		var zero Out
		*out = zero
	}
	b, err := json.Marshal(v)
	if err == nil {
		err = json.Unmarshal(b, out)
	}
	return err
}

func (f *Fn[In, Out]) failedEnsures(out Out) []string {
	var vs []string
	for _, e := range f.spec.Ensure {
		if !e.holds(out) {
			vs = append(vs, e.desc)
		}
	}
	return vs
}

// loopError maps the infer loop's errors to the library's.
func (f *Fn[In, Out]) loopError(c *callState, err error) error {
	var ex *infer.ExhaustedError
	var ce *infer.CompileError
	var ae *engine.AttemptError
	var pe *infer.ProviderError
	var tle *infer.ToolLoopError
	switch {
	case errors.As(err, &tle):
		e := &ToolLoopError{Function: f.name, Rounds: tle.Rounds}
		for _, tc := range tle.Calls {
			e.Calls = append(e.Calls, ToolCall{ID: tc.ID, Name: tc.Name, Args: tc.Args})
		}
		return e
	case errors.As(err, &pe):
		return providerError(f.name, pe)
	case errors.As(err, &ex) && ex.Parse:
		return &ParseError{Function: f.name, Attempts: ex.Violations}
	case errors.As(err, &ex):
		return &PostconditionError{Function: f.name, Attempts: ex.Violations}
	case errors.Is(err, engine.ErrBudgetExhausted):
		if be := c.env.check(f.name, c.rt.opts.Now()); be != nil {
			return be
		}
		return c.env.timeUp(f.name, c.rt.opts.Now())
	case errors.As(err, &ce):
		return &CompileError{Function: f.name, Message: ce.Message}
	case errors.As(err, &ae):
		return fmt.Errorf("%w: %s: %s", ErrStratum, f.name, joinViolations(ae.Violations))
	}
	return err
}

// providerError is the library's error for the provider's failure pe.
func providerError(fn string, pe *infer.ProviderError) *ProviderError {
	return faultOf(fn, pe.Provider, pe.Model, pe.Err)
}

func joinViolations(vs []string) string {
	b, _ := json.Marshal(vs)
	if len(vs) == 1 {
		return vs[0]
	}
	return string(b)
}

// callCache is the cache a Call reads and writes (nil: none).
type callCache struct {
	rt    *Runtime
	mem   *memCache
	store engine.Store
	key   string
}

// cacheFor returns the Call's cache: the flow's session cache, or
// the global one (the Store's, else memory with a warning); nil for
// CacheNone or a session cache outside a flow.
func (f *Fn[In, Out]) cacheFor(c *callState, raw map[string]any) *callCache {
	if f.spec.Cache == CacheNone || (f.spec.Cache == CacheSession && c.flow == nil) {
		return nil
	}
	canon, err := specs.CanonicalJSON(raw)
	if err != nil {
		return nil
	}
	key := f.name + "\x00" + specs.Hash12(canon)
	if f.spec.Cache == CacheSession {
		return &callCache{rt: c.rt, mem: c.flow.session, key: key}
	}
	key = "stratum-lib\x00" + key + "\x00" + f.hash
	if c.rt.store != nil {
		return &callCache{rt: c.rt, store: c.rt.store, key: key}
	}
	c.rt.warnOnce.Do(func() {
		c.rt.warnf("cache global without a Store: results are cached in memory for this process only (Options.Store persists them)")
	})
	return &callCache{rt: c.rt, mem: c.rt.global, key: key}
}

// cacheGet returns a cached output that still passes the schema and the
// postconditions.
func cacheGet[In, Out any](ctx context.Context, cc *callCache, f *Fn[In, Out]) (Out, bool) {
	var zero Out
	if cc == nil {
		return zero, false
	}
	var b []byte
	var ok bool
	if cc.store != nil {
		err := cc.store.View(ctx, func(tx engine.Tx) error {
			var err error
			b, ok, err = engine.ResultCache.Read(tx, cc.key, cc.rt.opts.Now())
			return err
		})
		if err != nil {
			cc.rt.warnf("cache read: %v", err)
		}
	} else {
		b, ok = cc.mem.get(cc.key)
	}
	if !ok {
		return zero, false
	}
	v, err := decodeExact(b)
	if err != nil {
		return zero, false
	}
	out, violations, _ := f.check(v)
	return out, len(violations) == 0
}

func (cc *callCache) put(ctx context.Context, out any) {
	if cc == nil {
		return
	}
	b, err := json.Marshal(out)
	if err != nil {
		return
	}
	if cc.store != nil {
		at := cc.rt.opts.Now()
		err := cc.store.Update(context.WithoutCancel(ctx), func(tx engine.Tx) error { return engine.ResultCache.Write(tx, cc.key, b, at) })
		if err != nil {
			cc.rt.warnf("cache write: %v", err)
		}
		return
	}
	cc.mem.put(cc.key, b)
}
