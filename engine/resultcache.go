package engine

import (
	"encoding/json"
	"time"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs"
)

// The result cache of agent-driven flows (the original's result_cache).
// When an agent drives a flow (over MCP or the CLI), the engine answers a
// cacheable step (Cacheable) from the store's result cache instead of
// dispatching it: the step's key (CacheKey, the rule `stratum run` uses
// too) is looked up when the step comes up, and a value that still passes
// the step's checks (output_schema → guardrails → ensure) is its output —
// a step record with cache_hit and cache_key (attempts 0, as the
// original), a step_done event with cache_hit, and the flow moves on as if
// the agent had reported it. A miss, a value that no longer passes, or one
// that does not decode dispatches the step as usual. An accepted result of
// a cacheable step is written into the cache in the commit that records it.
// Flows a runner drives (`stratum run`, background runs) keep the runner's
// own cache modes (none, session, global) over the same key rule.

// cacheReader reads the result cache (the Service's snapshot: one short
// View per read). Any read error is a miss: the cache is best-effort.
type cacheReader interface {
	CacheGet(key string, now time.Time) ([]byte, bool)
}

// CacheGet reads a result-cache entry at now (ResultCache.Read) in its own
// View; an error is a miss (the cache never decides a transition's fate).
func (sn *snapshot) CacheGet(key string, now time.Time) ([]byte, bool) {
	var (
		raw []byte
		ok  bool
	)
	err := sn.store.View(sn.ctx, func(tx Tx) (err error) {
		raw, ok, err = ResultCache.Read(tx, key, now)
		return err
	})
	return raw, err == nil && ok
}

// usesResultCache says the engine answers this flow's cacheable steps from
// the result cache and fills it: an agent drives the flow and the Service
// has a cache (env.Cache).
func usesResultCache(st *state.FlowState, env transitionEnv) bool {
	return env.Cache != nil && st.Driver == state.DriverAgent
}

// answeredFromCache answers the current step from the result cache when it
// can (see above): it records the hit, stores the output, advances the
// cursor and reports true; false leaves everything as it was. A step
// already dispatched waits for its report: its dispatch is never taken back.
func answeredFromCache(st *state.FlowState, env transitionEnv, step *specs.Step, res *transitionResult) bool {
	if !usesResultCache(st, env) || !Cacheable(step) || step.IsGate() {
		return false
	}
	if _, dispatched := st.DispatchedAt[step.ID]; dispatched {
		return false
	}
	inputs, err := resolveInputs(st, step)
	if err != nil {
		return false // the dispatch answers the error
	}
	key := CacheKey(env.Spec, step, inputs)
	if key == "" {
		return false
	}
	raw, ok := env.Cache.CacheGet(key, env.Now)
	if !ok {
		return false
	}
	var out any
	if json.Unmarshal(raw, &out) != nil {
		return false
	}
	if status, _ := checkResult(env, step, out); status != "" {
		return false
	}
	st.StepOutputs[step.ID] = out
	rec := stepRecord(st, env, step, 0, "")
	rec.CacheHit, rec.CacheKey = true, key
	st.Records = append(st.Records, rec)
	res.Events = append(res.Events, event(st, env, step.ID, StepDone{CacheHit: true}))
	advanceLinear(st, env)
	return true
}

// cacheEntryFor is the result-cache entry an accepted result of step
// fills, nil when the flow does not use the engine's cache, the step is
// not cacheable or the result has no JSON. It is computed before the
// cursor moves: the inputs resolve as they did for the dispatch.
func cacheEntryFor(st *state.FlowState, env transitionEnv, step *specs.Step, result any) *CacheEntry {
	if !usesResultCache(st, env) || !Cacheable(step) {
		return nil
	}
	inputs, err := resolveInputs(st, step)
	if err != nil {
		return nil
	}
	key := CacheKey(env.Spec, step, inputs)
	if key == "" {
		return nil
	}
	raw, err := json.Marshal(result)
	if err != nil {
		return nil
	}
	return &CacheEntry{Key: key, Value: raw}
}

// cacheHits is the audit's cache_hits: the trace's records answered from
// the result cache.
func cacheHits(recs []state.Record) int {
	n := 0
	for _, r := range recs {
		if r.CacheHit {
			n++
		}
	}
	return n
}

// markCacheHit marks the step record of an accepted result served from the
// cache under key (StepReport.FromCache): the last record of the step.
func markCacheHit(st *state.FlowState, stepID, key string) {
	for i := len(st.Records) - 1; i >= 0; i-- {
		if r := &st.Records[i]; r.Type == state.RecordStep && r.StepID == stepID {
			r.CacheHit, r.CacheKey = true, key
			return
		}
	}
}
