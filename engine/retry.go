package engine

import (
	"context"
	"math/rand/v2"
	"time"
)

// How a transition that keeps losing the race for its flow is tried again.
//
// Every transition is optimistic (snapshot.go): computed on a snapshot,
// committed only if its flows did not change meanwhile, else computed
// again — maxTransitionAttempts times at once, which is plenty against
// occasional writers. Against a busy one it is not: a Go program whose
// flow records 30 concurrent Calls every 300 ms commits to the flow back
// to back (it holds its own last commit, so it never reads the flow
// first), and on etcd a `stratum gate approve` — a read, then a
// transaction, each a round trip of the cluster — lost all five attempts
// to those commits in 4 of 5 tries. A person's decision must not be
// starved by a program's bookkeeping, so decisions and kills retry with
// patience: once the immediate attempts are lost, each further attempt
// waits a random pause that grows to retryPauseMax — long enough to land,
// sooner or later, in the gaps a busy writer leaves, and different for
// each decider — until the flow is written or retryPatience has passed
// since the first attempt (or the caller's context ends). A writer that
// leaves no gap at all still starves it; the error then says so, after
// retryPatience. The busy writer loses nothing: its next commit finds the
// flow changed and is computed again.
//
// (Waiting for a lull learnt from the store's Watch was tried and did no
// better: events reach a watcher after the commits that made them, so a
// "quiet" flow was often already written again.)

// retryPolicy is how a transition is retried once its immediate attempts
// (maxTransitionAttempts) all lost: patience is how long, from its first
// attempt, it keeps trying (0: no more).
type retryPolicy struct {
	patience time.Duration
}

// retryAtOnce is the default: maxTransitionAttempts immediate attempts.
var retryAtOnce = retryPolicy{}

// retryPatiently is the policy of a person's decision on a flow (a gate or
// review decision, ending a flow by hand).
var retryPatiently = retryPolicy{patience: retryPatience}

const (
	// retryPatience bounds the patient retries of one decision.
	retryPatience = 30 * time.Second
	// retryPauseMin and retryPauseMax bound the pause before a patient
	// retry: it doubles from retryPauseMin with each attempt up to
	// retryPauseMax, and a random three quarters or more of it is waited.
	retryPauseMin = 4 * time.Millisecond
	retryPauseMax = 300 * time.Millisecond
)

// again reports whether to make attempt (counted from 0) after attempts
// that all lost, having waited its pause; false once the patience since
// start is spent or ctx ended.
func (p retryPolicy) again(ctx context.Context, attempt int, start time.Time) bool {
	if p.patience <= 0 || time.Since(start) >= p.patience {
		return false
	}
	pause := retryPauseMax
	if n := attempt - maxTransitionAttempts; n < 7 {
		pause = min(retryPauseMax, retryPauseMin<<n)
	}
	pause = pause/4 + rand.N(pause-pause/4+1)
	t := time.NewTimer(pause)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return time.Since(start) < p.patience
	}
}
