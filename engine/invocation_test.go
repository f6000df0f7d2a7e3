package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/review"
)

// TestRefusalsNameTheInvocation: the commands a refusal advises start as
// the Service's Invocation says this stratum is run — "go run ." under the
// quick start's `go run`, a binary's path outside PATH — and "stratum"
// when it is not set: a decision on a stalled Go program's flow (kill,
// tui), a spec call on a library flow (tui, gate), a kill that would end a
// human gate (kill, tui).
func TestRefusalsNameTheInvocation(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct{ invocation, want string }{
		{"", "stratum"},
		{"go run .", "go run ."},
		{"/tmp/build/stratum", "/tmp/build/stratum"},
	} {
		t.Run(c.want, func(t *testing.T) {
			says := func(what string, err error, ty engine.ErrorType, cmds ...string) {
				t.Helper()
				e := engine.AsError(err)
				if e == nil || e.Type != ty {
					t.Fatalf("%s: %v, want %s", what, err, ty)
				}
				for _, cmd := range cmds {
					if !strings.Contains(e.Message, "`"+c.want+" "+cmd) {
						t.Errorf("%s: %q does not advise `%s %s…`", what, e.Message, c.want, cmd)
					}
				}
				if c.want != "stratum" && strings.Contains(e.Message, "`stratum ") {
					t.Errorf("%s: %q still names `stratum …`", what, e.Message)
				}
			}

			svc, _, clk := newService()
			svc.Invocation = c.invocation
			id := startLibraryFlow(t, svc, clk.Now())
			if _, err := engine.NewLibrary(svc).OpenReview(ctx, id, engine.ReviewRequest{Question: "Ship?", Schema: map[string]any{"type": "boolean"}}); err != nil {
				t.Fatal(err)
			}
			_, err := svc.StepDone(ctx, engine.StepReport{FlowID: id, StepID: "review-1", Result: map[string]any{}})
			says("step_done on a library flow", err, engine.ErrTypeLibraryFlow, "tui", "gate approve|reject")
			clk.Add(time.Minute) // the program is gone
			_, err = svc.GateResolve(ctx, id, review.Decision{StepID: "review-1", Outcome: review.Approve, ResolvedBy: review.Human,
				Channel: review.ChannelCLI, Reviewer: "ann", Value: []byte("true")})
			says("a decision on a stalled flow", err, engine.ErrTypeFlowStalled, "kill "+id+" --reason TEXT", "tui")

			parent, _ := humanGateBelow(t, svc, "outer")
			_, err = svc.Kill(ctx, parent, engine.KillRequest{By: "stratum gc", Reason: "stalled", Channel: review.ChannelPolicy})
			says("a policy kill above a human gate", err, engine.ErrTypeHumanGatePending, "kill "+parent+" --reason TEXT", "tui")
		})
	}
}
