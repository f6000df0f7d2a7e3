package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/review"
)

// specFired: a gate with a deadline whose on_timeout and on_kill vary, a step
// after it, a cleanup step, and a second gate with its own deadline.
const specFired = `version: "0.2"
functions:
  g:
    mode: gate
    timeout: 60
    on_timeout: ON_TIMEOUT
  g2:
    mode: gate
    timeout: 600
flows:
  main:
    input: {}
    max_rounds: 3
    steps:
      - id: work
        intent: "work"
      - id: review
        function: g
        depends_on: [work]
        on_approve: APPROVE
        on_revise: work
        on_kill: ON_KILL
      - id: ship
        intent: "ship"
        depends_on: [review]
      - id: second
        function: g2
        depends_on: [ship]
        on_approve: ~
        on_revise: ship
        on_kill: ~
      - id: cleanup
        intent: "cleanup"
        depends_on: [second]
`

// A check made after a deadline fired elsewhere answers what the check that
// applied it answered (firedTimeout); after a human decision, or once the
// flow moved on, it answers no_timeout as before.
func TestCheckTimeoutsAfterTheFact(t *testing.T) {
	sweep := func(f *fixture) map[string]any { return f.do(applyExpiredTimeout) }
	human := func(o review.Outcome) func(f *fixture) map[string]any {
		return func(f *fixture) map[string]any { return f.resolve("review", o) }
	}
	cases := []struct {
		name                     string
		onTimeout, onKill, onApp string
		decide                   func(f *fixture) map[string]any // at the expired gate
		then                     func(f *fixture)                // what happens before the check
		want                     map[string]any                  // the check's answer
		sameAsDecision           bool                            // the check repeats the decision's answer
		soon                     bool                            // check at once, not an hour later
	}{
		{name: "kill ended the flow", onTimeout: "kill", onKill: "~", onApp: "ship", decide: sweep,
			want: map[string]any{"status": "killed", "reason": "timeout", "total_duration_ms": 61000}, sameAsDecision: true},
		{name: "kill runs its cleanup step", onTimeout: "kill", onKill: "cleanup", onApp: "ship", decide: sweep,
			want: map[string]any{"status": "execute_step", "step_id": "cleanup"}, sameAsDecision: true},
		{name: "kill whose cleanup finished", onTimeout: "kill", onKill: "cleanup", onApp: "ship", decide: sweep,
			then: func(f *fixture) { f.later(5 * time.Second); f.stepDone("cleanup", map[string]any{"ok": true}) },
			want: map[string]any{"status": "killed", "reason": "timeout", "total_duration_ms": 66000}},
		{name: "approve", onTimeout: "approve", onKill: "~", onApp: "ship", decide: sweep,
			want: map[string]any{"status": "execute_step", "step_id": "ship"}, sameAsDecision: true},
		{name: "approve that ended the flow", onTimeout: "approve", onKill: "~", onApp: "~", decide: sweep,
			want: map[string]any{"status": "complete", "total_duration_ms": 61000}, sameAsDecision: true},
		{name: "revise", onTimeout: "revise", onKill: "~", onApp: "ship", decide: sweep,
			want: map[string]any{"status": "execute_step", "step_id": "work"}, sameAsDecision: true},
		{name: "approve, then a step was reported", onTimeout: "approve", onKill: "~", onApp: "ship", decide: sweep,
			then: func(f *fixture) { f.stepDone("ship", map[string]any{}) }, soon: true,
			want: map[string]any{"status": "no_timeout", "remaining_seconds": 600}},
		{name: "approve, then the next gate's deadline fired too", onTimeout: "approve", onKill: "~", onApp: "ship", decide: sweep,
			then: func(f *fixture) { f.stepDone("ship", map[string]any{}) },
			want: map[string]any{"status": "killed", "reason": "timeout", "total_duration_ms": 3661000}},
		{name: "approve, then the flow ended by a human", onTimeout: "approve", onKill: "~", onApp: "ship", decide: sweep,
			then: func(f *fixture) {
				f.stepDone("ship", map[string]any{})
				f.resolve("second", review.Approve, func(d *review.Decision) { d.StepID = "second" })
			},
			want: map[string]any{"status": "no_timeout", "message": "Flow is already complete"}},
		{name: "human kill", onTimeout: "kill", onKill: "~", onApp: "ship", decide: human(review.Kill),
			want: map[string]any{"status": "no_timeout", "message": "Flow is already complete"}},
		{name: "human approve", onTimeout: "kill", onKill: "~", onApp: "ship", decide: human(review.Approve),
			want: map[string]any{"status": "no_timeout", "message": "Current step is not a gate step"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := strings.NewReplacer("ON_TIMEOUT", c.onTimeout, "ON_KILL", c.onKill, "APPROVE", c.onApp).Replace(specFired)
			f := atGate(t, src)
			f.later(61 * time.Second)
			decided := c.decide(f)
			if c.then != nil {
				c.then(f)
			}
			if !c.soon {
				f.later(time.Hour) // the check comes much later (a restart)
			}
			got := f.do(checkTimeouts)
			expect(t, got, c.want)
			if c.sameAsDecision && show(got) != show(decided) {
				t.Errorf("check answered\n%s\nthe decision answered\n%s", show(got), show(decided))
			}
			// The check changes nothing: asking again gives the same answer.
			if again := f.do(checkTimeouts); show(again) != show(got) {
				t.Errorf("second check %s, first %s", show(again), show(got))
			}
		})
	}
}

// The sweep's own transition counts only deadlines it applies: one another
// process applied is no_timeout to it.
func TestSweepIgnoresFiredTimeouts(t *testing.T) {
	src := strings.NewReplacer("ON_TIMEOUT", "kill", "ON_KILL", "~", "APPROVE", "ship").Replace(specFired)
	f := atGate(t, src)
	f.later(61 * time.Second)
	f.do(checkTimeouts)
	r := f.do(applyExpiredTimeout)
	expect(t, r, map[string]any{"status": "no_timeout", "message": "Flow is already complete"})
}

// Certificate templates without sections get the original's default
// sections in the dispatched intent (specs fills them in).
func TestCertDefaultSectionsInIntent(t *testing.T) {
	src := `version: "0.2"
flows:
  main:
    input: {}
    steps:
      - id: think
        intent: "Find the bug."
        reasoning_template: {require_citations: true}
`
	_, r := plan(t, src, "main", nil)
	intent, _ := r["intent"].(string)
	for _, h := range []string{"## Premises", "## Trace", "## Conclusion"} {
		if !strings.Contains(intent, h) {
			t.Errorf("intent lacks %q:\n%s", h, intent)
		}
	}
}
