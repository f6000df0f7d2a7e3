package engine

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/stratum-go/stratum/review"
)

// commitCheckpoint saves a named checkpoint of the flow (stratum_commit,
// upstream-behavior §2.13). The label is whitespace-trimmed; an empty label
// is invalid_label. A checkpoint with the same label is replaced. The
// snapshot holds deep copies of exactly the fields Checkpoint lists; inputs,
// other checkpoints, dispatch times, parallel task state and the budget
// ledger are not captured. commitCheckpoint is allowed at any time, even on a finished
// flow; step_number is current_idx+1 even past the end.
func commitCheckpoint(st *FlowState, env Env, label string) (transitionResult, error) {
	label = strings.TrimSpace(label)
	if label == "" {
		return refused(refusal(ErrTypeInvalidLabel, "label must be a non-empty string")), nil
	}
	cp := snapshotCheckpoint(st, label, env)
	if st.Checkpoints == nil {
		st.Checkpoints = map[string]*Checkpoint{}
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
	ev := Event{Time: env.Now, FlowID: st.FlowID, Type: EventCheckpoint, StepID: current, Data: map[string]any{
		"action":      "commit",
		"label":       label,
		"step_number": st.CurrentIdx + 1,
	}}
	return transitionResult{Outcome: out, Events: []Event{ev}}, nil
}

// revertCheckpoint restores the flow to a checkpoint (stratum_revert,
// upstream-behavior §2.13): the checkpoint's fields are copied back (the
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
// the CLI or the console) needs a human's channel (HumanChannel), else
// gate_requires_human; and no revert may end, skip or orphan a pending
// approver: human gate (human_gate_pending, see human.go).
func revertCheckpoint(st *FlowState, env Env, label string, ch review.Channel) (transitionResult, error) {
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
		return refused(humanGatePending(st, g, what)), nil
	}
	if waitsForHuman(st) && !humanChannel(ch) && (cp.CurrentIdx != st.CurrentIdx || cp.Round != st.Round) {
		return refused(humanGatePending(st, st, what+" through "+channelName(ch))), nil
	}
	undone := revertedDecisions(st, cp)
	if !humanChannel(ch) {
		for _, r := range undone {
			if !r.Reverted && humanDecision(r) {
				return refused(refusal(ErrTypeGateRequiresHuman,
					"Reverting flow '%s' to '%s' would undo a human decision (%s of gate '%s', round %d, through %s); "+
						"a revert past a human decision needs a human: revert in `stratum tui`",
					st.FlowID, label, r.Outcome, r.StepID, r.Round, orStr(r.Channel, "unknown channel"))), nil
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
	ev := Event{Time: env.Now, FlowID: st.FlowID, Type: EventCheckpoint, Data: map[string]any{
		"action":      "revert",
		"label":       label,
		"step_number": st.CurrentIdx + 1,
	}}
	if ch != "" {
		ev.Data["channel"] = string(ch)
	}
	res.Events = append([]Event{ev}, res.Events...)
	return res, nil
}

// revertedDecisions lists, in trace order, the gate records of st (every
// round, the active one last; records already marked reverted included)
// that cp does not hold: the decisions a revert to cp would erase. Records
// are matched by content, the reverted mark aside, so a decision a later
// checkpoint holds comes back to life when reverted to it.
func revertedDecisions(st *FlowState, cp *Checkpoint) []Record {
	kept := map[string]bool{}
	for _, recs := range append(append([][]Record{}, cp.Rounds...), cp.Records) {
		for _, r := range recs {
			if r.Type == RecordGate {
				kept[decisionKey(r)] = true
			}
		}
	}
	var out []Record
	for _, recs := range append(append([][]Record{}, st.Rounds...), st.Records) {
		for _, r := range recs {
			if k := decisionKey(r); r.Type == RecordGate && !kept[k] {
				kept[k] = true // once, however often it was carried
				out = append(out, ckptRecords([]Record{r})[0])
			}
		}
	}
	return out
}

// decisionKey identifies a gate record by its content, the reverted mark
// aside.
func decisionKey(r Record) string {
	r.Reverted = false
	b, _ := json.Marshal(r)
	return string(b)
}

// humanDecision reports whether a gate record was decided by a human: made
// through a human's channel, or (a record that names no channel) resolved_by
// human.
func humanDecision(r Record) bool {
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
func checkpointLabels(st *FlowState) []string {
	out := make([]string, 0, len(st.Checkpoints))
	for l := range st.Checkpoints {
		out = append(out, l)
	}
	sort.Strings(out)
	return out
}

// snapshotCheckpoint deep-copies the checkpointed fields of st.
func snapshotCheckpoint(st *FlowState, label string, env Env) *Checkpoint {
	return &Checkpoint{
		Label:                label,
		StepOutputs:          ckptValueMap(st.StepOutputs),
		Attempts:             ckptIntMap(st.Attempts),
		Records:              ckptRecords(st.Records),
		CurrentIdx:           st.CurrentIdx,
		Round:                st.Round,
		Rounds:               ckptRounds(st.Rounds),
		RoundStartStepID:     ckptStrPtr(st.RoundStartStepID),
		TerminalStatus:       ckptStrPtr(st.TerminalStatus),
		Iterations:           ckptIterations(st.Iterations),
		ArchivedIterations:   ckptArchivedIterations(st.ArchivedIterations),
		ActiveIteration:      ckptActiveIteration(st.ActiveIteration),
		IterationOutcome:     ckptStringMap(st.IterationOutcome),
		IterationBest:        ckptBest(st.IterationBest),
		IterationAccumulator: ckptAccumulators(st.IterationAccumulator),
		ActiveChildFlowID:    ckptStrPtr(st.ActiveChildFlowID),
		ChildAudits:          ckptChildAudits(st.ChildAudits),
		CreatedAt:            env.Now,
	}
}

// restoreCheckpoint copies the checkpoint's fields back into st (deep copies,
// so the checkpoint can be reverted to again).
func restoreCheckpoint(st *FlowState, cp *Checkpoint) {
	st.StepOutputs = ckptValueMap(cp.StepOutputs)
	if st.StepOutputs == nil {
		st.StepOutputs = map[string]any{}
	}
	st.Attempts = ckptIntMap(cp.Attempts)
	if st.Attempts == nil {
		st.Attempts = map[string]int{}
	}
	st.Records = ckptRecords(cp.Records)
	if st.Records == nil {
		st.Records = []Record{}
	}
	st.CurrentIdx = cp.CurrentIdx
	st.Round = cp.Round
	st.Rounds = ckptRounds(cp.Rounds)
	if st.Rounds == nil {
		st.Rounds = [][]Record{}
	}
	st.RoundStartStepID = ckptStrPtr(cp.RoundStartStepID)
	st.TerminalStatus = ckptStrPtr(cp.TerminalStatus)
	st.Iterations = ckptIterations(cp.Iterations)
	if st.Iterations == nil {
		st.Iterations = map[string][]IterationEntry{}
	}
	st.ArchivedIterations = ckptArchivedIterations(cp.ArchivedIterations)
	if st.ArchivedIterations == nil {
		st.ArchivedIterations = []map[string][]IterationEntry{}
	}
	st.ActiveIteration = ckptActiveIteration(cp.ActiveIteration)
	st.IterationOutcome = ckptStringMap(cp.IterationOutcome)
	if st.IterationOutcome == nil {
		st.IterationOutcome = map[string]string{}
	}
	st.IterationBest = ckptBest(cp.IterationBest)
	if st.IterationBest == nil {
		st.IterationBest = map[string]*IterationBest{}
	}
	st.IterationAccumulator = ckptAccumulators(cp.IterationAccumulator)
	if st.IterationAccumulator == nil {
		st.IterationAccumulator = map[string]*Accumulator{}
	}
	st.ActiveChildFlowID = ckptStrPtr(cp.ActiveChildFlowID)
	st.ChildAudits = ckptChildAudits(cp.ChildAudits)
	if st.ChildAudits == nil {
		st.ChildAudits = map[string][]json.RawMessage{}
	}
}

// ckptValue deep-copies a JSON-like value (maps, slices, scalars). Other
// composite types are copied through a JSON round trip.
func ckptValue(v any) any {
	switch x := v.(type) {
	case nil, bool, string, float64, float32, int, int8, int16, int32, int64,
		uint, uint8, uint16, uint32, uint64, json.Number:
		return x
	case map[string]any:
		return ckptValueMap(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = ckptValue(e)
		}
		return out
	case json.RawMessage:
		return append(json.RawMessage(nil), x...)
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return x // not encodable: keep as is (it would not persist either)
		}
		var out any
		if err := json.Unmarshal(b, &out); err != nil {
			return x
		}
		return out
	}
}

func ckptValueMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = ckptValue(v)
	}
	return out
}

func ckptIntMap(m map[string]int) map[string]int {
	if m == nil {
		return nil
	}
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func ckptStringMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func ckptStrPtr(p *string) *string {
	if p == nil {
		return nil
	}
	s := *p
	return &s
}

func ckptRecords(rs []Record) []Record {
	if rs == nil {
		return nil
	}
	out := make([]Record, len(rs))
	for i, r := range rs {
		r.RoundStartStepID = ckptStrPtr(r.RoundStartStepID)
		r.Agent = ckptStrPtr(r.Agent)
		r.ChildFlowID = ckptStrPtr(r.ChildFlowID)
		out[i] = r
	}
	return out
}

func ckptRounds(rounds [][]Record) [][]Record {
	if rounds == nil {
		return nil
	}
	out := make([][]Record, len(rounds))
	for i, r := range rounds {
		out[i] = ckptRecords(r)
	}
	return out
}

func ckptEntries(es []IterationEntry) []IterationEntry {
	if es == nil {
		return nil
	}
	out := make([]IterationEntry, len(es))
	for i, e := range es {
		e.Result = ckptValue(e.Result)
		if e.Score != nil {
			s := *e.Score
			e.Score = &s
		}
		if e.NewCount != nil {
			n := *e.NewCount
			e.NewCount = &n
		}
		if e.DryStreak != nil {
			n := *e.DryStreak
			e.DryStreak = &n
		}
		out[i] = e
	}
	return out
}

func ckptIterations(m map[string][]IterationEntry) map[string][]IterationEntry {
	if m == nil {
		return nil
	}
	out := make(map[string][]IterationEntry, len(m))
	for k, v := range m {
		out[k] = ckptEntries(v)
	}
	return out
}

func ckptArchivedIterations(a []map[string][]IterationEntry) []map[string][]IterationEntry {
	if a == nil {
		return nil
	}
	out := make([]map[string][]IterationEntry, len(a))
	for i, m := range a {
		out[i] = ckptIterations(m)
	}
	return out
}

func ckptActiveIteration(a *ActiveIteration) *ActiveIteration {
	if a == nil {
		return nil
	}
	c := *a
	return &c
}

func ckptBest(m map[string]*IterationBest) map[string]*IterationBest {
	if m == nil {
		return nil
	}
	out := make(map[string]*IterationBest, len(m))
	for k, b := range m {
		if b == nil {
			out[k] = nil
			continue
		}
		c := IterationBest{Result: ckptValue(b.Result), Iteration: b.Iteration}
		if b.Score != nil {
			s := *b.Score
			c.Score = &s
		}
		out[k] = &c
	}
	return out
}

func ckptAccumulators(m map[string]*Accumulator) map[string]*Accumulator {
	if m == nil {
		return nil
	}
	out := make(map[string]*Accumulator, len(m))
	for k, a := range m {
		if a == nil {
			out[k] = nil
			continue
		}
		c := Accumulator{DryStreak: a.DryStreak}
		if a.Items != nil {
			c.Items = make([]any, len(a.Items))
			for i, it := range a.Items {
				c.Items[i] = ckptValue(it)
			}
		}
		if a.Keys != nil {
			c.Keys = append([]string(nil), a.Keys...)
		}
		out[k] = &c
	}
	return out
}

func ckptChildAudits(m map[string][]json.RawMessage) map[string][]json.RawMessage {
	if m == nil {
		return nil
	}
	out := make(map[string][]json.RawMessage, len(m))
	for k, list := range m {
		if list == nil {
			out[k] = nil
			continue
		}
		c := make([]json.RawMessage, len(list))
		for i, r := range list {
			c[i] = append(json.RawMessage(nil), r...)
		}
		out[k] = c
	}
	return out
}
