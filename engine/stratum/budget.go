package stratum

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/stratum-go/stratum/engine"
)

// Budget is an envelope of time, money and tokens (§7); a zero field is
// unbounded. A Call's envelope is its Spec's Budget intersected with the
// remainder of every enclosing flow's: every attempt, sample and iteration
// is charged to all of them. Time is wall clock from the start of the call
// or flow; cost and tokens are checked before each request, so the request
// that crosses a limit returns its answer and the next one fails with a
// *BudgetError before anything is sent.
type Budget struct {
	Time   time.Duration
	USD    float64
	Tokens int64
}

// IsZero reports whether b bounds nothing.
func (b Budget) IsZero() bool { return b.Time <= 0 && b.USD <= 0 && b.Tokens <= 0 }

// envelope is a running budget: a deadline, and what is left of USD and
// tokens, charged by every attempt; it chains to the enclosing one.
type envelope struct {
	parent   *envelope
	mu       sync.Mutex
	deadline time.Time // zero: none
	usd      float64   // remaining; valid when hasUSD
	hasUSD   bool
	tokens   int64 // remaining; valid when hasTok
	hasTok   bool
}

// newEnvelope starts b now under parent (nil: the outermost).
func newEnvelope(b Budget, parent *envelope, now time.Time) *envelope {
	e := &envelope{parent: parent}
	if b.Time > 0 {
		e.deadline = now.Add(b.Time)
	}
	if b.USD > 0 {
		e.usd, e.hasUSD = b.USD, true
	}
	if b.Tokens > 0 {
		e.tokens, e.hasTok = b.Tokens, true
	}
	return e
}

// view intersects e with its ancestors: the earliest deadline, the least
// USD and tokens left.
func (e *envelope) view() engine.BudgetView {
	var v engine.BudgetView
	usd, hasUSD := math.Inf(1), false
	tokens, hasTok := int64(math.MaxInt64), false
	for x := e; x != nil; x = x.parent {
		x.mu.Lock()
		if !x.deadline.IsZero() && (v.Deadline.IsZero() || x.deadline.Before(v.Deadline)) {
			v.Deadline = x.deadline
		}
		if x.hasUSD && x.usd < usd {
			usd, hasUSD = x.usd, true
		}
		if x.hasTok && x.tokens < tokens {
			tokens, hasTok = x.tokens, true
		}
		x.mu.Unlock()
	}
	if hasUSD {
		v.USD = &usd
	}
	if hasTok {
		v.Tokens = tokens
		if tokens <= 0 {
			v.Tokens = -1 // the executor's "no tokens left"
		}
	}
	return v
}

// check returns a *BudgetError when the envelope is spent at now.
func (e *envelope) check(fn string, now time.Time) error {
	v := e.view()
	switch {
	case !v.Deadline.IsZero() && !now.Before(v.Deadline):
		return &BudgetError{Function: fn, Reason: "time", Message: "no time left"}
	case v.USD != nil && *v.USD <= 0:
		return &BudgetError{Function: fn, Reason: "usd", Message: fmt.Sprintf("usd spent (%.6f left)", *v.USD)}
	case v.Tokens < 0:
		return &BudgetError{Function: fn, Reason: "tokens", Message: "tokens spent"}
	}
	return nil
}

// charge spends usd (nil: unknown, nothing charged) and tokens from e and
// every ancestor.
func (e *envelope) charge(usd *float64, tokens int64) {
	for x := e; x != nil; x = x.parent {
		x.mu.Lock()
		if x.hasUSD && usd != nil {
			x.usd -= *usd
		}
		if x.hasTok {
			x.tokens -= tokens
		}
		x.mu.Unlock()
	}
}

// extend moves every deadline of the chain by d: time spent waiting for a
// human is not charged (§6.1).
// NOTE(core): for AwaitHuman: `if f := flowFrom(ctx); f != nil {
// f.budget.extend(waited) }` once the decision is in.
func (e *envelope) extend(d time.Duration) {
	for x := e; x != nil; x = x.parent {
		x.mu.Lock()
		if !x.deadline.IsZero() {
			x.deadline = x.deadline.Add(d)
		}
		x.mu.Unlock()
	}
}
