package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/specs"
)

// A step's budget (the envelope of its next attempt, and what to do when
// it is spent) and its result cache.

// deadlineSpent reports whether an attempt failed because the budget's
// deadline passed: a timeout is the budget running out (seed 000 §7.2), not
// a failed attempt.
func deadlineSpent(view engine.BudgetView, err error) bool {
	var ae *engine.AttemptError
	if !errors.As(err, &ae) || ae.Kind != engine.AttemptTimeout || view.Deadline.IsZero() {
		return false
	}
	return !time.Now().Before(view.Deadline)
}

// exhaust ends the flow (and, through the parents' reports, its ancestors)
// as budget_exhausted.
func (r *Runner) exhaust(ctx context.Context, fc *flowCtx, step *specs.Step, reason string) (turn, error) {
	next, err := answered(r.svc.ExhaustBudget(ctx, fc.id, reason, r.report()))
	if err != nil {
		return turn{}, err
	}
	rep := r.stepReport(fc, step)
	rep.Status = "failed"
	rep.Violations = []string{"budget exhausted: " + reason}
	r.emit(Event{Kind: EventStepFailed, FlowID: fc.id, Step: step, Attempt: fc.call.attempt, Round: fc.round, Violations: rep.Violations, Spec: fc.spec})
	return next, nil
}

// budgetView computes the envelope of the next attempt: the step's per-call
// budget (ms from the call's first attempt; usd and tokens spent by this
// call) intersected with what is left of the flow budget of this flow and
// every ancestor (ms counts executor time recorded in the ledger, not time
// waiting at gates). A non-empty reason means the budget is exhausted; usd
// and tokens only stop calls that spend them (infer, agent), as in seed 000
// §7.3.
func (r *Runner) budgetView(ctx context.Context, fc *flowCtx, step *specs.Step, kind executorKind) (engine.BudgetView, string, error) {
	var v engine.BudgetView
	now := time.Now()
	spends := kind == execInfer || kind == execAgent
	// Who set each limit, so that the message names the envelope that ran
	// out: the step's own, or a flow's.
	var dWho, uWho, tWho string
	minDeadline := func(d time.Time, who string) {
		if v.Deadline.IsZero() || d.Before(v.Deadline) {
			v.Deadline, dWho = d, who
		}
	}
	minUSD := func(u float64, who string) {
		if v.USD == nil || u < *v.USD {
			v.USD, uWho = &u, who
		}
	}
	minTokens := func(t int64, who string) {
		if v.Tokens == 0 || t < v.Tokens {
			v.Tokens, tWho = t, who
		}
	}
	if b := step.Budget; b != nil {
		who := fmt.Sprintf("step '%s'", step.ID)
		if b.MS > 0 {
			minDeadline(specs.After(fc.call.start, b.MS, time.Millisecond), who)
		}
		if b.USD != nil {
			minUSD(*b.USD-fc.call.usd, who)
		}
		if b.Tokens > 0 {
			minTokens(b.Tokens-fc.call.tokens, who)
		}
	}
	for f := fc; f != nil; f = f.parent {
		b := f.flow.Budget
		if b == nil {
			continue
		}
		led, err := r.svc.Query().Ledger(ctx, f.id)
		if err != nil {
			return v, "", err
		}
		who := fmt.Sprintf("flow '%s'", f.flow.Name)
		if b.MS > 0 {
			minDeadline(specs.After(now, b.MS-led.SpentMS, time.Millisecond), who)
		}
		if b.USD != nil {
			minUSD(*b.USD-led.SpentUSD, who)
		}
		if b.Tokens > 0 {
			minTokens(b.Tokens-led.SpentTokens, who)
		}
		if kind == execAgent && b.MaxAgentDispatches > 0 && led.AgentDispatch >= b.MaxAgentDispatches {
			return v, fmt.Sprintf("flow '%s' used its %d agent dispatches", f.flow.Name, b.MaxAgentDispatches), nil
		}
	}
	switch {
	case !v.Deadline.IsZero() && !v.Deadline.After(now):
		return v, fmt.Sprintf("the time budget (ms) of %s is spent (before step '%s')", dWho, step.ID), nil
	case spends && v.USD != nil && *v.USD <= 0:
		return v, fmt.Sprintf("the cost budget (usd) of %s is spent (before step '%s')", uWho, step.ID), nil
	case spends && v.Tokens != 0 && v.Tokens <= 0:
		return v, fmt.Sprintf("the token budget of %s is spent (before step '%s')", tWho, step.ID), nil
	}
	if v.Tokens < 0 {
		v.Tokens = 0
	}
	return v, "", nil
}

// cacheKey is the cache key of a cacheable step ("" when the step is not
// cached, the runner's cache is off, or the step runs an agent): the
// engine's one key rule (engine.CacheKey, the key an agent-driven flow's
// steps are cached under too); session keys also carry the root flow's id.
func (r *Runner) cacheKey(fc *flowCtx, step *specs.Step, kind executorKind, inputs map[string]any) string {
	if r.opts.Cache == CacheNone || kind == execAgent {
		return ""
	}
	key := engine.CacheKey(fc.spec, step, inputs)
	if key != "" && r.opts.Cache == CacheSession {
		key = rootID(fc) + "/" + key
	}
	return key
}

func (r *Runner) cacheGet(ctx context.Context, fc *flowCtx, key string) (any, bool, error) {
	if key == "" {
		return nil, false, nil
	}
	if r.opts.Cache == CacheSession {
		v, ok := r.session[key]
		return v, ok, nil
	}
	var raw []byte
	var ok bool
	err := r.svc.Store.View(ctx, func(tx engine.Tx) error {
		var err error
		raw, ok, err = engine.ResultCache.Read(tx, key, r.now())
		return err
	})
	if err != nil || !ok {
		return nil, false, err
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, false, nil // a corrupt entry is a miss
	}
	return v, true, nil
}

func (r *Runner) cachePut(ctx context.Context, fc *flowCtx, key string, v any) error {
	if r.opts.Cache == CacheSession {
		r.session[key] = v
		return nil
	}
	raw, ok := r.globalCacheValue(key, v)
	if !ok {
		return nil
	}
	at := r.now()
	return r.svc.Store.Update(ctx, func(tx engine.Tx) error { return engine.ResultCache.Write(tx, key, raw, at) })
}

// globalCacheValue is what v is stored as under key in the store's result
// cache (ok false: the cache is not global, there is no key, or v has no
// JSON, and nothing is cached).
func (r *Runner) globalCacheValue(key string, v any) ([]byte, bool) {
	if key == "" || r.opts.Cache == CacheSession {
		return nil, false
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	return raw, true
}

// deadlineReason says whose time budget (ms) ran out while a step ran: the
// step's own when its deadline was the nearest, else its flow's (or an
// enclosing flow's).
func deadlineReason(fc *flowCtx, step *specs.Step) string {
	if b := step.Budget; b != nil && b.MS > 0 {
		own := specs.After(fc.call.start, b.MS, time.Millisecond)
		if !own.After(time.Now()) {
			return fmt.Sprintf("step '%s' ran out of its time budget (ms)", step.ID)
		}
	}
	who := fmt.Sprintf("flow '%s'", fc.flow.Name)
	if fc.parent != nil {
		who += " or an enclosing flow"
	}
	return fmt.Sprintf("the time budget (ms) of %s ran out during step '%s'", who, step.ID)
}
