package engine

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
)

// TestRandomWalks drives flows with random (often wrong) calls and checks
// invariants after every transition: no panic, no unexpected error, the
// status agrees with the pending gate and the cursor, records carry the
// current round.
func TestRandomWalks(t *testing.T) {
	specsByName := map[string]string{
		"gate":   specGate,
		"loop":   specReviewLoop,
		"policy": specPolicy,
		"checks": specChecks,
		"child":  specChild,
	}
	results := []any{
		map[string]any{}, map[string]any{"ok": true, "n": 3, "approved": true, "done": true, "v": 1},
		map[string]any{"ok": false, "n": 0, "approved": false}, map[string]any{"note": "secret"}, nil, "text",
		map[string]any{"status": "complete", "output": map[string]any{"done": true}},
	}
	for name, src := range specsByName {
		for seed := uint64(1); seed <= 40; seed++ {
			t.Run(fmt.Sprintf("%s/%d", name, seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 7))
				f, _ := plan(t, src, "main", map[string]any{"x": "hi"})
				for i := 0; i < 40; i++ {
					stepIDs := []string{"zz"}
					for _, s := range f.env.Flow.Steps {
						stepIDs = append(stepIDs, s.ID)
					}
					if cur := currentStep(f.st, f.env); cur != nil && rng.IntN(3) > 0 {
						stepIDs = []string{cur.ID}
					}
					id := stepIDs[rng.IntN(len(stepIDs))]
					var fn func(st *state.FlowState, env transitionEnv) (transitionResult, error)
					var op string
					switch rng.IntN(9) {
					case 0, 1, 2:
						res := results[rng.IntN(len(results))]
						op = "step_done " + id
						fn = func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
							return stepDone(st, env, id, res)
						}
					case 3, 4:
						o := []review.Outcome{review.Approve, review.Revise, review.Kill, "bogus"}[rng.IntN(4)]
						op = "gate " + id + " " + string(o)
						fn = func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
							return gateResolve(st, env, review.Decision{StepID: id, Outcome: o, ResolvedBy: review.Human, Channel: review.ChannelCLI})
						}
					case 5:
						op = "skip " + id
						fn = func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
							return skipStep(st, env, id, "r")
						}
					case 6:
						op = "resume"
						fn = resumeFlow
					case 7:
						op = "timeouts"
						f.later(time.Duration(rng.IntN(90)) * time.Second)
						fn = checkTimeouts
					case 8:
						op = "parallel " + id
						fn = func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
							return parallelDone(st, env, id, nil, "clean")
						}
					}
					before := showV(f.st)
					res, err := fn(f.st, f.env)
					if err != nil {
						if e, ok := err.(*Error); !ok || e.Type != ErrTypeExecution {
							t.Fatalf("%s: unexpected error %v", op, err)
						}
						// The service discards the state on an execution error.
						f.roundTripFrom(before)
						continue
					}
					if res.Wire() == nil {
						t.Fatalf("%s: nil response", op)
					}
					if res.Unchanged && showV(f.st) != before {
						t.Fatalf("%s: marked unchanged but the state changed", op)
					}
					f.absorb(res)
					f.roundTrip()
					checkInvariants(t, op, f)
				}
				t.Logf("final status %s round %d", f.st.Status, f.st.Round)
			})
		}
	}
}

func (f *fixture) roundTripFrom(js string) {
	var st state.FlowState
	if err := jsonUnmarshal([]byte(js), &st); err != nil {
		f.t.Fatal(err)
	}
	f.st = &st
}

func checkInvariants(t *testing.T, op string, f *fixture) {
	t.Helper()
	st := f.st
	total := totalSteps(f.env)
	if st.CurrentIdx < 0 || st.CurrentIdx > total {
		t.Fatalf("%s: cursor %d out of [0,%d]", op, st.CurrentIdx, total)
	}
	switch st.Status {
	case state.StatusAwaitingGate:
		cur := currentStep(st, f.env)
		if st.Gate == nil || cur == nil || !cur.IsGate() || st.Gate.StepID != cur.ID || st.Gate.Round != st.Round {
			t.Fatalf("%s: awaiting_gate but gate %+v at %v", op, st.Gate, cur)
		}
	case state.StatusRunning:
		if st.Gate != nil {
			t.Fatalf("%s: running with a pending gate %+v", op, st.Gate)
		}
		if st.CurrentIdx >= total {
			t.Fatalf("%s: running past the end", op)
		}
	case state.StatusComplete, state.StatusKilled:
		if st.CurrentIdx < total || st.Gate != nil {
			t.Fatalf("%s: %s with cursor %d gate %+v", op, st.Status, st.CurrentIdx, st.Gate)
		}
	case state.StatusFailed:
	default:
		t.Fatalf("%s: unknown status %q", op, st.Status)
	}
	for _, r := range st.Records {
		if r.Round != st.Round {
			t.Fatalf("%s: record %+v not in round %d", op, r, st.Round)
		}
	}
	if len(st.Rounds) != st.Round || len(st.ArchivedIterations) != st.Round {
		t.Fatalf("%s: round %d with %d archived rounds", op, st.Round, len(st.Rounds))
	}
}
