package engine

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
)

// commitCheckpoint saves a named checkpoint of the flow (stratum_commit,
// upstream-behavior §2.13). The label is whitespace-trimmed; an empty label
// is invalid_label. A checkpoint with the same label is replaced. The
// snapshot is a deep copy of the flow's progress (StepProgress,
// RoundProgress, ChildProgress); inputs, other checkpoints, dispatch times,
// parallel task state and the budget ledger are not captured.
// commitCheckpoint is allowed at any time, even on a finished
// flow; step_number is current_idx+1 even past the end.
func commitCheckpoint(st *state.FlowState, env transitionEnv, label string) (transitionResult, error) {
	label = strings.TrimSpace(label)
	if label == "" {
		return refused(refusal(ErrTypeInvalidLabel, "label must be a non-empty string")), nil
	}
	cp := snapshotCheckpoint(st, label, env)
	if st.Checkpoints == nil {
		st.Checkpoints = map[string]*state.Checkpoint{}
	}
	st.Checkpoints[label] = cp

	current := "" // null past the end
	if env.Flow != nil && st.CurrentIdx >= 0 && st.CurrentIdx < len(env.Flow.Order) {
		current = env.Flow.Steps[env.Flow.Order[st.CurrentIdx]].ID
	}
	out := &checkpointCommitted{
		FlowID:        st.FlowID,
		Label:         label,
		StepNumber:    st.CurrentIdx + 1,
		CurrentStepID: current,
		Checkpoints:   checkpointLabels(st),
	}
	ev := Event{Time: env.Now, FlowID: st.FlowID, Type: EventCheckpoint, StepID: current, Data: Checkpoint{
		Action:     "commit",
		Label:      label,
		StepNumber: st.CurrentIdx + 1,
	}}
	return transitionResult{Outcome: out, Events: []Event{ev}}, nil
}

// revertCheckpoint restores the flow to a checkpoint (stratum_revert,
// upstream-behavior §2.13): the checkpoint's progress is copied back (the
// checkpoint itself stays, so one can revert to it again; inputs, the other
// checkpoints and dispatch times are untouched) and the current dispatch is
// computed with the policy loop (README, "Deliberate differences": the original skipped it), plus
// `reverted_to`. A snapshot past the end yields the completion (or killed)
// payload, without reverted_to as the original. An unknown (or blank) label is checkpoint_not_found with the
// available labels, as the original.
//
// Ours: decisions are never erased. Every gate record the checkpoint does
// not hold (decided after it was taken, in any round) is kept, appended to
// the restored trace with reverted: true. ch is the channel the revert came
// through: undoing a human's decision (a gate record made through the TUI,
// the CLI or the console) needs a human's channel (humanChannel), else
// gate_requires_human; and no revert may end, skip or orphan a pending
// approver: human gate (human_gate_pending, see human.go).
func revertCheckpoint(st *state.FlowState, env transitionEnv, label string, ch review.Channel) (transitionResult, error) {
	label = strings.TrimSpace(label)
	cp := st.Checkpoints[label]
	if cp == nil { // an empty label too, as the original
		e := refusal(ErrTypeCheckpointUnknown, "No checkpoint '%s' on flow '%s'", label, st.FlowID)
		e.Available = checkpointLabels(st)
		return refused(e), nil
	}
	what := "reverting flow '" + st.FlowID + "' to '" + label + "'"
	if g := humanGateBelow(st, env); g != nil && (cp.CurrentIdx != st.CurrentIdx || !sameStrPtr(cp.ActiveChildFlowID, st.ActiveChildFlowID)) {
		// The waiting child would be left behind, on any channel.
		return refused(humanGatePending(st, g, what, env.cmd())), nil
	}
	if waitsForHuman(st) && !humanChannel(ch) && (cp.CurrentIdx != st.CurrentIdx || cp.Round != st.Round) {
		return refused(humanGatePending(st, st, what+" through "+channelName(ch), env.cmd())), nil
	}
	undone := revertedDecisions(st, cp)
	if !humanChannel(ch) {
		for _, r := range undone {
			if !r.Reverted && humanDecision(r) {
				return refused(refusal(ErrTypeGateRequiresHuman,
					"Reverting flow '%s' to '%s' would undo a human decision (%s of gate '%s', round %d, through %s); "+
						"a revert past a human decision needs a human: revert in `%s tui`",
					st.FlowID, label, r.Outcome, r.StepID, r.Round, orStr(r.Channel, "unknown channel"), env.cmd())), nil
			}
		}
	}
	restoreCheckpoint(st, cp)
	for _, r := range undone {
		r.Reverted = true
		st.Records = append(st.Records, r)
	}

	// currentDispatch sets the status, the pending gate (a gate of the
	// restored round keeps its persisted deadline) and dispatch time the
	// restored cursor calls for, also for a flow that had ended.
	res, err := currentDispatch(st, env)
	if err != nil {
		return transitionResult{}, err
	}
	if n := NotesOf(res.Outcome); n != nil && !pastEnd(st, env) {
		// The original adds reverted_to to a dispatch only; a snapshot past
		// the end answers the bare completion object.
		n.RevertedTo = label
	}
	res.Unchanged = false
	ev := Event{Time: env.Now, FlowID: st.FlowID, Type: EventCheckpoint, Data: Checkpoint{
		Action:     "revert",
		Label:      label,
		StepNumber: st.CurrentIdx + 1,
		Channel:    string(ch),
	}}
	res.Events = append([]Event{ev}, res.Events...)
	return res, nil
}

// revertedDecisions lists, in trace order, the gate records of st (every
// round, the active one last; records already marked reverted included)
// that cp does not hold: the decisions a revert to cp would erase. Records
// are matched by content, the reverted mark aside, so a decision a later
// checkpoint holds comes back to life when reverted to it.
func revertedDecisions(st *state.FlowState, cp *state.Checkpoint) []state.Record {
	kept := map[string]bool{}
	for _, recs := range append(append([][]state.Record{}, cp.Rounds...), cp.Records) {
		for _, r := range recs {
			if r.Type == state.RecordGate {
				kept[decisionKey(r)] = true
			}
		}
	}
	var out []state.Record
	for _, recs := range append(append([][]state.Record{}, st.Rounds...), st.Records) {
		for _, r := range recs {
			if k := decisionKey(r); r.Type == state.RecordGate && !kept[k] {
				kept[k] = true // once, however often it was carried
				out = append(out, r.Clone())
			}
		}
	}
	return out
}

// decisionKey identifies a gate record by its content, the reverted mark
// aside.
func decisionKey(r state.Record) string {
	r.Reverted = false
	b, _ := json.Marshal(r)
	return string(b)
}

// humanDecision reports whether a gate record was decided by a human: made
// through a human's channel, or (a record that names no channel) resolved_by
// human.
func humanDecision(r state.Record) bool {
	if r.Channel == "" {
		return r.ResolvedBy == string(review.Human)
	}
	return humanChannel(review.Channel(r.Channel))
}

func channelName(ch review.Channel) string {
	if ch == "" {
		return "an unknown channel"
	}
	return string(ch)
}

func sameStrPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// checkpointLabels lists the flow's checkpoint labels, sorted (never nil).
func checkpointLabels(st *state.FlowState) []string {
	out := make([]string, 0, len(st.Checkpoints))
	for l := range st.Checkpoints {
		out = append(out, l)
	}
	sort.Strings(out)
	return out
}

// snapshotCheckpoint deep-copies the progress of st (Clone), and its
// judge_history and judge_outcome, as the original's checkpoint.
func snapshotCheckpoint(st *state.FlowState, label string, env transitionEnv) *state.Checkpoint {
	return &state.Checkpoint{
		Label:         label,
		StepProgress:  st.StepProgress.Clone(),
		RoundProgress: st.RoundProgress.Clone(),
		ChildProgress: st.ChildProgress.Clone(),
		Judge:         st.Judge.Clone(),
		CreatedAt:     env.Now,
	}
}

// restoreCheckpoint copies the checkpoint's progress (and judge
// progress) back into st (deep copies, so the checkpoint can be reverted
// to again), a null collection as an empty one.
func restoreCheckpoint(st *state.FlowState, cp *state.Checkpoint) {
	st.StepProgress = cp.StepProgress.Clone()
	st.RoundProgress = cp.RoundProgress.Clone()
	st.ChildProgress = cp.ChildProgress.Clone()
	st.Judge = cp.Judge.Clone()
	ensureMaps(st)
}
