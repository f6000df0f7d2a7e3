package clijson

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
)

// KillHelp is the long help of `stratum kill`.
const KillHelp = `Kill ends a flow that nothing drives any more — a stalled flow whose stratum run or Go
program died (kill -9, a crash, a closed laptop), or an agent's flow nobody will finish — as
killed, recorded with who (--by, default $USER), why (--reason, required) and the channel
cli: "ended" in stratum query flow, and the flow_finished event's reviewer, rationale and
channel. Its running child flows end with it; the open reviews of a Go program's flow are
withdrawn. A killed flow is finished: stratum gc --older-than prunes it later.

It refuses a flow a live process still drives (a runner or a Go program whose lease is live:
stop that process first), and a flow that has already ended. A flow waiting at an
approver: human gate (or above one) is ended only on an interactive terminal, after you type
the gate's step id (or the flow's short id), as stratum gate asks.

Prints {"_schema_version": "1", "ok": true, "flow_id", "status": "killed", "killed_flows",
"by", "reason", "stalled"}. Exit status: 0 ended; 1 unknown flow, refused or another error;
2 usage (no --reason, or a human gate without a terminal or the confirmation).`

// KillExamples are the examples of `stratum kill`'s help.
const KillExamples = `  stratum kill 3f2a1c --reason "the program was killed; its review will never be read"
  stratum kill 3f2a1c --reason "abandoned" --by ann`

// Kill ends flowID through svc (engine.Service.Kill, channel cli): at a
// pending approver: human gate (in the flow or below it) it first asks
// confirm for the typed confirmation, as stratum gate does (a refusal
// matches review.ErrNotAllowed). It returns the command's answer and
// whether the flow was ended; a store failure is an error.
func Kill(ctx context.Context, svc *engine.Service, flowID string, k engine.KillRequest, confirm review.HumanConfirm) (engine.Response, bool, error) {
	k.Channel = review.ChannelCLI
	if g, err := humanGateOf(ctx, svc, flowID); err != nil {
		return nil, false, err
	} else if g != nil {
		d := review.Decision{FlowID: g.FlowID, StepID: g.Gate.StepID, Outcome: review.Kill}
		if err := confirm.Confirm(d, review.HumanApprover); err != nil {
			return nil, false, err
		}
	}
	out, err := svc.Kill(ctx, flowID, k)
	if e := engine.AsError(err); e != nil {
		return Refused(flowID, e), false, nil
	} else if err != nil {
		return nil, false, err
	}
	r := engine.Response{"_schema_version": schemaVersion, "flow_id": flowID}
	for key, v := range engine.Wire(out, nil) {
		r[key] = v
	}
	r["ok"] = true
	return r, true, nil
}

// Refused is the answer of a command on FLOW (stratum kill) that the
// engine refused: {"_schema_version", "ok": false, "flow_id", "error":
// {"code", "message"}}.
func Refused(flowID string, e *engine.Error) engine.Response {
	return engine.Response{"_schema_version": schemaVersion, "flow_id": flowID, "ok": false, "error": queryError(e)}
}

// humanGateOf is the flow among flowID and its active descendants that
// waits at an approver: human gate, or nil. (Asked even when a live lease
// drives the flow, which the engine then refuses: the lease may expire in
// between, and the kill must not pass a human gate unconfirmed.)
func humanGateOf(ctx context.Context, svc *engine.Service, flowID string) (*state.FlowState, error) {
	seen := map[string]bool{}
	for id := flowID; id != "" && !seen[id] && len(seen) < 64; {
		seen[id] = true
		st, err := svc.Query().Get(ctx, id)
		if errors.Is(err, engine.ErrNotFound) {
			return nil, nil
		} else if err != nil {
			return nil, err
		}
		if st.Status.Finished() {
			return nil, nil
		}
		if st.Status == state.StatusAwaitingGate && st.Gate != nil && st.Gate.Approver == string(review.HumanApprover) {
			return st, nil
		}
		id = ""
		if st.ActiveChildFlowID != nil {
			id = *st.ActiveChildFlowID
		}
	}
	return nil, nil
}

// StalledNote is what `stratum gate` adds to a decision recorded on a flow
// nothing drives any more (a runner's flow whose stratum run exited): the
// decision stands, and only `stratum run --resume ROOT` acts on it. ""
// when the flow is driven, has ended, or is not a runner's. (A Go
// program's stalled flow refuses the decision itself: flow_stalled.)
func StalledNote(ctx context.Context, svc *engine.Service, flowID string, now time.Time) (string, error) {
	st, err := svc.Query().Get(ctx, flowID)
	if err != nil {
		return "", err
	}
	sum := engine.Summarize(st, nil)
	if !sum.Stalled(now) || st.Driver != state.DriverRunner {
		return "", nil
	}
	root := st
	for i := 0; root.ParentFlowID != nil && i < 64; i++ {
		p, err := svc.Query().Get(ctx, *root.ParentFlowID)
		if err != nil {
			break
		}
		root = p
	}
	return fmt.Sprintf("flow %s is stalled (its stratum run has exited): the decision is recorded, and the flow continues only with: stratum run --resume %s", flowID, root.FlowID), nil
}

// KillStalled is `stratum gc --stalled --older-than D`: it ends, as a
// policy (channel policy, by "stratum gc"), every flow that has been
// stalled for at least olderThan — a runner's or a Go program's flow whose
// lease expired that long ago (its last update, without one). A flow at
// (or above) an approver: human gate is not ended by a policy: it is
// listed in skipped with the refusal. It returns the ids ended (a child
// ended with its parent is listed once, under the parent's answer) and
// the flows skipped.
func KillStalled(ctx context.Context, svc *engine.Service, olderThan time.Duration, now time.Time) (killed []string, skipped []map[string]any, err error) {
	var due []string
	for _, status := range []state.FlowStatus{state.StatusRunning, state.StatusAwaitingGate} {
		f := engine.ListFilter{Status: status, Limit: 500}
		for {
			page, err := svc.Query().List(ctx, f)
			if err != nil {
				return nil, nil, err
			}
			for i := range page {
				if stalledSince(&page[i], now).Add(olderThan).After(now) || !page[i].Stalled(now) {
					continue
				}
				due = append(due, page[i].FlowID)
			}
			if len(page) < f.Limit {
				break
			}
			f.After = page[len(page)-1].Cursor()
		}
	}
	ended := map[string]bool{}
	for _, id := range due {
		if ended[id] {
			continue
		}
		out, err := svc.Kill(ctx, id, engine.KillRequest{By: "stratum gc", Channel: review.ChannelPolicy,
			Reason: fmt.Sprintf("stalled for more than %s (gc --stalled)", olderThan)})
		if e := engine.AsError(err); e != nil {
			if e.Type != engine.ErrTypeFlowComplete {
				skipped = append(skipped, map[string]any{"flow_id": id, "code": string(e.Type), "message": e.Message})
			}
			continue
		} else if err != nil {
			return killed, skipped, err
		}
		killed = append(killed, id)
		for _, f := range out.(*engine.FlowKilled).Flows {
			ended[f] = true
		}
	}
	return killed, skipped, nil
}

// stalledSince is when nothing has driven the flow since: its lease's end,
// else its last update.
func stalledSince(sum *state.FlowSummary, now time.Time) time.Time {
	if sum.Owner != nil {
		return sum.Owner.ExpiresAt
	}
	return sum.UpdatedAt
}
