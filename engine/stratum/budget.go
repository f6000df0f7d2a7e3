package stratum

import (
	"math"
	"sync"
	"time"

	"github.com/stratum-go/stratum/engine"
)

// Budget is an envelope of time, money and tokens; a zero field is
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
	parent *envelope
	scope  string // what it bounds, for errors: "the call", "flow NAME"
	limit  Budget
	start  time.Time

	mu       sync.Mutex
	deadline time.Time     // zero: none
	waited   time.Duration // time spent waiting for a person (moved the deadline)
	usd      float64       // remaining; valid when hasUSD
	hasUSD   bool
	tokens   int64 // remaining; valid when hasTok
	hasTok   bool
}

// newEnvelope starts b now under parent (nil: the outermost); scope names
// it in a *BudgetError.
func newEnvelope(b Budget, parent *envelope, now time.Time, scope string) *envelope {
	e := &envelope{parent: parent, scope: scope, limit: b, start: now}
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

// check returns a *BudgetError naming the first envelope of the chain
// (innermost first) that is spent at now, else nil.
func (e *envelope) check(fn string, now time.Time) error {
	for x := e; x != nil; x = x.parent {
		if be := x.spent(fn, now, false); be != nil {
			return be
		}
	}
	return nil
}

// timeUp is the *BudgetError of a deadline that passed during a request:
// the envelope of the chain whose deadline is the earliest.
func (e *envelope) timeUp(fn string, now time.Time) *BudgetError {
	var first *envelope
	for x := e; x != nil; x = x.parent {
		x.mu.Lock()
		if !x.deadline.IsZero() && (first == nil || x.deadline.Before(first.deadline)) {
			first = x
		}
		x.mu.Unlock()
	}
	if first == nil {
		return &BudgetError{Function: fn, Reason: "time", Message: "the deadline passed during the request"}
	}
	return first.spent(fn, now, true)
}

// spent is x's *BudgetError at now (time: when its deadline passed, or
// always when force), else nil.
func (e *envelope) spent(fn string, now time.Time, force bool) *BudgetError {
	e.mu.Lock()
	defer e.mu.Unlock()
	be := &BudgetError{Function: fn, Envelope: e.scope}
	switch {
	case !e.deadline.IsZero() && (force || !now.Before(e.deadline)):
		be.Reason, be.Limit.Time, be.Spent.Time = "time", e.limit.Time, now.Sub(e.start)-e.waited
	case e.hasUSD && e.usd <= 0:
		be.Reason, be.Limit.USD, be.Spent.USD = "usd", e.limit.USD, e.limit.USD-e.usd
	case e.hasTok && e.tokens <= 0:
		be.Reason, be.Limit.Tokens, be.Spent.Tokens = "tokens", e.limit.Tokens, e.limit.Tokens-e.tokens
	default:
		return nil
	}
	be.Message = be.describe()
	return be
}

// usdScope names the innermost envelope of the chain that bounds USD
// ("the call", "flow NAME"), "" when none does. Whether an envelope bounds
// USD is set when it starts and never changes.
func (e *envelope) usdScope() string {
	for x := e; x != nil; x = x.parent {
		if x.hasUSD {
			return x.scope
		}
	}
	return ""
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
// person is not charged (AwaitHuman, through flowRun.humanWait).
func (e *envelope) extend(d time.Duration) {
	for x := e; x != nil; x = x.parent {
		x.mu.Lock()
		if !x.deadline.IsZero() {
			x.deadline = x.deadline.Add(d)
		}
		x.waited += d
		x.mu.Unlock()
	}
}
