package clijson

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/enginetest"
	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/specs/exprlang"
)

func TestGateLineDecision(t *testing.T) {
	set := func(flags ...string) func(string) bool {
		return func(f string) bool {
			for _, g := range flags {
				if f == g {
					return true
				}
			}
			return false
		}
	}
	for _, tc := range []struct {
		name    string
		line    GateLine
		wantErr string
		check   func(t *testing.T, d review.Decision)
	}{
		{name: "approve", line: GateLine{Outcome: review.Approve, ResolvedBy: "agent", Reviewer: "ann", Note: "ok", Set: set()},
			check: func(t *testing.T, d review.Decision) {
				want := review.Decision{FlowID: "f", StepID: "g", Outcome: review.Approve, Rationale: "ok", Reviewer: "ann",
					ResolvedBy: review.Agent, Channel: review.ChannelCLI}
				if d.Round != nil || d.Option != 0 || d.Value != nil || d.FlowID != want.FlowID || d.StepID != want.StepID ||
					d.Outcome != want.Outcome || d.Rationale != want.Rationale || d.Reviewer != want.Reviewer ||
					d.ResolvedBy != want.ResolvedBy || d.Channel != want.Channel {
					t.Errorf("decision = %+v, want %+v", d, want)
				}
			}},
		{name: "reviewer defaults to the user", line: GateLine{Outcome: review.Approve, ResolvedBy: "human", Set: set()},
			check: func(t *testing.T, d review.Decision) {
				if d.Reviewer != review.CurrentUser() {
					t.Errorf("reviewer = %q, want %q", d.Reviewer, review.CurrentUser())
				}
			}},
		{name: "round only when given", line: GateLine{Outcome: review.Approve, ResolvedBy: "human", Reviewer: "a", Round: 0, Set: set("round")},
			check: func(t *testing.T, d review.Decision) {
				if d.Round == nil || *d.Round != 0 {
					t.Errorf("round = %v, want 0", d.Round)
				}
			}},
		{name: "option", line: GateLine{Outcome: review.Approve, ResolvedBy: "human", Reviewer: "a", Option: 2, Set: set("option")},
			check: func(t *testing.T, d review.Decision) {
				if d.Option != 2 {
					t.Errorf("option = %d, want 2", d.Option)
				}
			}},
		{name: "value", line: GateLine{Outcome: review.Approve, ResolvedBy: "human", Reviewer: "a", Value: `{"ship": true}`, Set: set("value")},
			check: func(t *testing.T, d review.Decision) {
				if string(d.Value) != `{"ship": true}` {
					t.Errorf("value = %s", d.Value)
				}
			}},
		{name: "bad resolved-by", line: GateLine{Outcome: review.Approve, ResolvedBy: "robot", Set: set()},
			wantErr: `--resolved-by "robot": want human, agent or system`},
		{name: "option and value", line: GateLine{Outcome: review.Approve, ResolvedBy: "human", Reviewer: "a", Option: 1, Value: "1", Set: set("option", "value")},
			wantErr: "--option and --value: give one of them"},
		{name: "option from 1", line: GateLine{Outcome: review.Approve, ResolvedBy: "human", Reviewer: "a", Set: set("option")},
			wantErr: "--option 0: options are counted from 1"},
		{name: "value not JSON", line: GateLine{Outcome: review.Approve, ResolvedBy: "human", Reviewer: "a", Value: "yes", Set: set("value")},
			wantErr: `--value "yes" is not JSON (a string is quoted: --value '"yes"')`},
		{name: "revise needs a note", line: GateLine{Outcome: review.Revise, ResolvedBy: "human", Reviewer: "a", Set: set()},
			wantErr: ": say why with --note"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := tc.line.Decision("f", "g")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, d)
		})
	}
}

const humanGateSpec = `version: "0.2"
functions:
  human_approval:
    mode: gate
    approver: human
flows:
  main:
    input: {}
    steps:
      - id: build
        intent: "Build it"
      - id: review
        function: human_approval
        depends_on: [build]
        on_approve: ~
        on_revise: build
        on_kill: ~
`

// atHumanGate is a service over a memory store with one flow waiting at
// an approver: human gate (step review).
func atHumanGate(t *testing.T) (*engine.Service, string) {
	t.Helper()
	ctx := context.Background()
	svc := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: enginetest.New()}
	planned, err := svc.Plan(ctx, humanGateSpec, "main", nil, engine.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := engine.FlowIDOf(planned)
	out, err := svc.StepDone(ctx, engine.StepReport{FlowID: id, StepID: "build", Result: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := out.(*engine.GateDispatch); !ok {
		t.Fatalf("step-done answered %T, want a gate wait", out)
	}
	return svc, id
}

func TestConfirmHuman(t *testing.T) {
	svc, id := atHumanGate(t)
	ctx := context.Background()
	decision := func(step string) *review.Decision {
		return &review.Decision{FlowID: id, StepID: step, Outcome: review.Approve, ResolvedBy: review.Human}
	}
	t.Run("without a terminal", func(t *testing.T) {
		err := ConfirmHuman(ctx, svc, decision("review"), review.HumanConfirm{In: strings.NewReader("review\n"), Out: io.Discard})
		if !errors.Is(err, review.ErrNeedsTerminal) {
			t.Fatalf("err = %v, want ErrNeedsTerminal", err)
		}
	})
	t.Run("confirmed pins the round", func(t *testing.T) {
		d := decision("review")
		err := ConfirmHuman(ctx, svc, d, review.HumanConfirm{Terminal: true, In: strings.NewReader("review\n"), Out: io.Discard})
		if err != nil {
			t.Fatal(err)
		}
		st, err := svc.Query().Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if d.Round == nil || *d.Round != st.Gate.Round {
			t.Fatalf("round = %v, want the gate's %d", d.Round, st.Gate.Round)
		}
	})
	t.Run("not confirmed", func(t *testing.T) {
		err := ConfirmHuman(ctx, svc, decision("review"), review.HumanConfirm{Terminal: true, In: strings.NewReader("yes\n"), Out: io.Discard})
		if !errors.Is(err, review.ErrNotConfirmed) || !errors.Is(err, review.ErrNotAllowed) {
			t.Fatalf("err = %v, want ErrNotConfirmed", err)
		}
	})
	t.Run("another step needs nothing", func(t *testing.T) {
		if err := ConfirmHuman(ctx, svc, decision("build"), review.HumanConfirm{}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("an unknown flow is the engine's to answer", func(t *testing.T) {
		d := &review.Decision{FlowID: "nope", StepID: "review"}
		if err := ConfirmHuman(ctx, svc, d, review.HumanConfirm{}); err != nil {
			t.Fatal(err)
		}
	})
}

func TestQueryFlow(t *testing.T) {
	svc, id := atHumanGate(t)
	ctx := context.Background()
	now := time.Now()
	v, status, err := QueryFlow(ctx, svc, id[:6], now)
	if err != nil || status != 0 {
		t.Fatalf("QueryFlow(prefix) = status %d, err %v", status, err)
	}
	if fv, ok := v.(*FlowView); !ok || fv.FlowID != id || fv.StepCount != 2 {
		t.Fatalf("QueryFlow(prefix) = %#v, want the flow %s", v, id)
	}
	v, status, err = QueryFlow(ctx, svc, "0000-no-such-flow", now)
	if err != nil || status != statusFailure {
		t.Fatalf("QueryFlow(unknown) = status %d, err %v", status, err)
	}
	b, _ := json.Marshal(v)
	if want := `{"_schema_version":"1","error":{"code":"NOT_FOUND","message":"Flow '0000-no-such-flow' not found"},"ok":false}`; string(b) != want {
		t.Fatalf("QueryFlow(unknown) = %s, want %s", b, want)
	}
}

// A Go program's review is confirmed at its own approver, whatever gate
// the flow's state names.
func TestConfirmHumanLibraryReview(t *testing.T) {
	ctx := context.Background()
	svc := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: enginetest.New()}
	id, err := engine.NewLibrary(svc).StartFlow(ctx, engine.LibraryFlowOptions{Name: "prog"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := engine.NewLibrary(svc).OpenReview(ctx, id, engine.ReviewRequest{Question: "ship?", Approver: string(review.HumanApprover)})
	if err != nil {
		t.Fatal(err)
	}
	d := &review.Decision{FlowID: id, StepID: r.ID, Outcome: review.Approve, ResolvedBy: review.Human}
	if err := ConfirmHuman(ctx, svc, d, review.HumanConfirm{}); !errors.Is(err, review.ErrNeedsTerminal) {
		t.Fatalf("without a terminal: err = %v, want ErrNeedsTerminal", err)
	}
	if err := ConfirmHuman(ctx, svc, d, review.HumanConfirm{Terminal: true, In: strings.NewReader(r.ID + "\n"), Out: io.Discard}); err != nil {
		t.Fatal(err)
	}
	if d.Round == nil || *d.Round != 0 {
		t.Fatalf("round = %v, want 0 (a review has no rounds)", d.Round)
	}
}

// TestGCLineMode: `stratum gc`'s flags, as a table of what each asks for
// and the usage problems.
func TestGCLineMode(t *testing.T) {
	for _, tt := range []struct {
		name    string
		line    GCLine
		set     bool // --older-than given
		want    GCMode
		wantErr string
	}{
		{"prune", GCLine{OlderThan: time.Hour}, true, GCPrune, ""},
		{"prune zero", GCLine{}, true, GCPrune, ""},
		{"prune without duration", GCLine{}, false, GCPrune, "gc needs --older-than DURATION"},
		{"prune negative", GCLine{OlderThan: -time.Hour}, true, GCPrune, "must not be negative"},
		{"stalled", GCLine{Stalled: true, OlderThan: time.Hour}, true, GCStale, ""},
		{"stalled without duration", GCLine{Stalled: true}, false, GCStale, "gc --stalled needs --older-than"},
		{"stalled negative", GCLine{Stalled: true, OlderThan: -1}, true, GCStale, "gc --stalled needs --older-than"},
		{"damaged", GCLine{Damaged: true}, false, GCDamaged, ""},
		{"damaged and older-than", GCLine{Damaged: true}, true, GCDamaged, "not both"},
		{"damaged and stalled", GCLine{Damaged: true, Stalled: true}, false, GCDamaged, "not both"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			set := tt.set
			tt.line.Set = func(flag string) bool { return flag == "older-than" && set }
			got, err := tt.line.Mode()
			if got != tt.want || (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Mode() = %v, %v; want %v, %q", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// TestKillLineRequest: `stratum kill` needs a reason (a blank one too is
// refused) and records who, $USER unless --by.
func TestKillLineRequest(t *testing.T) {
	if _, err := (KillLine{Reason: "  "}).Request(); err == nil || !strings.Contains(err.Error(), "needs --reason") {
		t.Fatalf("blank reason: %v", err)
	}
	k, err := KillLine{Reason: "superseded", By: "ann"}.Request()
	if err != nil || k.By != "ann" || k.Reason != "superseded" {
		t.Fatalf("Request() = %+v, %v", k, err)
	}
	t.Setenv("USER", "bob")
	if k, err := (KillLine{Reason: "x"}).Request(); err != nil || k.By != review.CurrentUser() || k.By == "" {
		t.Fatalf("default --by: %+v, %v (CurrentUser %q)", k, err, review.CurrentUser())
	}
}
