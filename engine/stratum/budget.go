package stratum

import (
	"sync"
	"time"
)

// Budget is an envelope of time, money and tokens (§7); a zero field is
// unbounded. A Call's envelope is its Spec's Budget intersected with the
// remainder of every enclosing flow's.
type Budget struct {
	Time   time.Duration
	USD    float64
	Tokens int64
}

// envelope is a running budget: a deadline, and what is left of USD and
// tokens, charged by every attempt; it chains to the enclosing flow's.
type envelope struct {
	parent   *envelope
	deadline time.Time // zero: none
	mu       sync.Mutex
	usd      float64 // remaining; valid when hasUSD
	hasUSD   bool
	tokens   int64 // remaining; valid when hasTok
	hasTok   bool
}
