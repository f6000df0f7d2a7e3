package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/stratum-go/stratum/engine/internal/libreview"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
)

// Library records the flows of Go programs (the engine/stratum library):
// it starts a program's flow, records its calls, opens and withdraws its
// reviews, renews the program's lease and ends the flow. It is the
// library's side of the engine, beside Service (the state machine of spec
// flows): a library flow has no spec, so none of Service's transitions
// applies to it but GateResolve (a review is decided from any front end,
// first decision wins), Kill and the deadline sweeps.
//
// A Library commits through its Service: the same store, the same
// snapshot-and-commit rule, the same event log and in-process watchers.
type Library struct {
	svc *Service
}

// NewLibrary returns the recorder of Go programs' flows over svc's store
// and events.
func NewLibrary(svc *Service) *Library { return &Library{svc: svc} }

// LibraryFlowOptions starts a library flow.
type LibraryFlowOptions struct {
	Name   string
	Inputs map[string]any
	// Owner is the program's lease (renewed with Library.RenewLease); a flow
	// whose lease expired shows as stalled.
	Owner *state.Lease
	// ParentFlowID is the enclosing library flow of a Flow.Run inside
	// another ("" for none): the flow is stored as its child.
	ParentFlowID string
}

// StartFlow creates a library flow (status running, driver library)
// and returns its id.
func (l *Library) StartFlow(ctx context.Context, opt LibraryFlowOptions) (string, error) {
	var id string
	_, err := l.svc.optimistic(ctx, "start of library flow "+opt.Name, func(sn *snapshot, now time.Time) (computed, error) {
		id = l.svc.newID()
		st := newFlowState(id, opt.Name, "", state.CloneObject(opt.Inputs), now)
		if st.Inputs == nil {
			st.Inputs = map[string]any{}
		}
		st.Driver = state.DriverLibrary
		st.Library = &state.LibraryState{}
		st.Owner = state.ClonePtr(opt.Owner)
		if opt.ParentFlowID != "" {
			st.ParentFlowID = state.ClonePtr(&opt.ParentFlowID)
		}
		env := transitionEnv{Now: now}
		return computed{st: st, res: transitionResult{Events: []Event{event(st, env, "", FlowCreated{
			FlowName: opt.Name, Driver: string(state.DriverLibrary), ParentFlowID: opt.ParentFlowID,
		})}}}, nil
	})
	if err != nil {
		return "", err
	}
	return id, nil
}

// transition runs fn on a library flow (refusing any other flow),
// computed on a snapshot and committed like every transition.
func (l *Library) transition(ctx context.Context, what, flowID string, fn func(st *state.FlowState, env transitionEnv) (transitionResult, error)) (Outcome, error) {
	if !plausibleFlowID(flowID) {
		return nil, flowNotFound(flowID)
	}
	return l.svc.optimistic(ctx, what+" of flow "+flowID, func(sn *snapshot, now time.Time) (computed, error) {
		st, err := sn.Get(flowID)
		if errors.Is(err, ErrNotFound) {
			return computed{}, flowNotFound(flowID)
		}
		if err != nil {
			return computed{}, err
		}
		if !st.IsLibrary() {
			return computed{}, execErrorf("Flow '%s' is not a library flow", flowID)
		}
		env := transitionEnv{Ctx: ctx, Now: now, NewID: l.svc.newID, Root: l.svc.Root, Children: sn, Cmd: l.svc.invocation()}
		res, err := fn(st, env)
		return computed{st: st, res: res}, err
	})
}

// RecordCall records one call of a library flow in one commit: a step
// record (function, attempts, duration, cache hit), the spend in the budget
// ledger, the trace record and a trace event.
func (l *Library) RecordCall(ctx context.Context, flowID string, c LibraryCall) error {
	_, err := l.transition(ctx, "call", flowID, func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		st.Library.Calls++
		stepID := c.Function + "#" + strconv.Itoa(st.Library.Calls)
		rec := newRecord(st, env, state.RecordStep, stepID)
		rec.FunctionName = c.Function
		rec.Attempts = c.Attempts
		rec.DurationMS = c.DurationMS
		rec.CacheHit = c.CacheHit
		rec.StepMode = modeFunction
		st.Records = append(st.Records, rec)
		st.CurrentIdx = st.Library.Calls
		if c.Trace != nil {
			c.Trace.StepID = stepID // the audit's calls name their trace entry
		}
		cr := CallRecord{StepID: stepID, Attempt: c.Attempts, DurationMS: c.DurationMS,
			Tokens: c.Tokens, CostUSD: c.CostUSD, Trace: c.Trace, Executor: "infer", CacheHit: c.CacheHit}
		if msg, _ := c.Data["error"].(string); msg != "" {
			cr.ErrorKind, cr.Violations = libraryCallFailed, []string{msg}
		}
		return recordCall(st, env, cr)
	})
	return err
}

// libraryCallFailed is the ErrorKind of a Go program's failed Call in its
// trace event; the error's text is the violation.
const libraryCallFailed = "library"

// FinishFlow ends a library flow: complete with its output, or
// failed with the error's text. Reviews still open are withdrawn; the lease
// is dropped.
func (l *Library) FinishFlow(ctx context.Context, flowID string, output any, failure error) error {
	_, err := l.transition(ctx, "finish", flowID, func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		if st.Status.Finished() {
			return transitionResult{Unchanged: true}, nil
		}
		var res transitionResult
		for _, r := range st.Library.OpenReviews() {
			res = mergeResults(res, withdraw(st, env, r, "flow finished"))
		}
		status := state.StatusComplete
		if failure != nil {
			status = state.StatusFailed
			st.Library.Error = failure.Error()
		} else {
			st.Library.Output = state.CloneValue(output)
		}
		st.Status = status
		st.Gate = nil
		st.Owner = nil
		res.Events = append(res.Events, event(st, env, "", FlowFinished{Status: string(status)}))
		return res, nil
	})
	return err
}

// RenewLease renews (or drops, with a nil lease) the program's lease
// on a library flow.
func (l *Library) RenewLease(ctx context.Context, flowID string, lease *state.Lease) error {
	_, err := l.transition(ctx, "lease", flowID, func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		if st.Status.Finished() {
			return transitionResult{Unchanged: true}, nil
		}
		st.Owner = state.ClonePtr(lease)
		return transitionResult{}, nil
	})
	return err
}

// OpenReview opens a review in a library flow: it is persisted (status
// awaiting_gate, the review in the pending-gate index, a gate_opened event)
// before this returns, and answers the review as stored.
func (l *Library) OpenReview(ctx context.Context, flowID string, req ReviewRequest) (*state.LibraryReview, error) {
	var opened *state.LibraryReview
	_, err := l.transition(ctx, "review", flowID, func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		if st.Status.Finished() {
			return refused(refusal(ErrTypeFlowComplete, "Flow is already complete")), nil
		}
		r := &state.LibraryReview{
			ID:        "review-" + strconv.Itoa(len(st.Library.Reviews)+1),
			Question:  req.Question,
			Trigger:   orStr(req.Trigger, "explicit"),
			Artifacts: state.CloneObject(req.Artifacts),
			Options:   state.CloneRaws(req.Options),
			Schema:    state.CloneObject(req.Schema),
			Approver:  orStr(req.Approver, string(review.AnyApprover)),
			OpenedAt:  env.Now,
			OnTimeout: state.CloneRaw(req.OnTimeout),
			Status:    state.ReviewOpen,
		}
		if req.Timeout > 0 {
			d := env.Now.Add(req.Timeout)
			r.Deadline = &d
		}
		if err := libreview.CheckOpen(r); err != nil {
			return transitionResult{}, execErrorf("%s", err.Error())
		}
		st.Library.Reviews = append(st.Library.Reviews, r)
		syncLibraryGate(st)
		opened = r.Clone()
		// The question, trigger and options are in the state (LibraryReview).
		data := GateOpened{Approver: string(r.Approver), Deadline: state.ClonePtr(r.Deadline)}
		return transitionResult{Events: []Event{event(st, env, r.ID, data)}}, nil
	})
	if err != nil {
		return nil, err
	}
	return opened, nil
}

// WithdrawReview closes an open review nobody decided (the program stopped
// waiting); a review already closed is left as it is. It answers the review
// as stored afterwards.
func (l *Library) WithdrawReview(ctx context.Context, flowID, reviewID, reason string) (*state.LibraryReview, error) {
	var out *state.LibraryReview
	_, err := l.transition(ctx, "withdrawal", flowID, func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		r := st.Library.Review(reviewID)
		if r == nil {
			return refused(refusal(ErrTypeWrongStep, "Flow '%s' has no review '%s'", flowID, reviewID)), nil
		}
		out = r.Clone()
		if r.Status != state.ReviewOpen {
			return transitionResult{Unchanged: true}, nil
		}
		res := withdraw(st, env, r, reason)
		out = r.Clone()
		return res, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func withdraw(st *state.FlowState, env transitionEnv, r *state.LibraryReview, reason string) transitionResult {
	r.Status = state.ReviewWithdrawn
	r.Decision = &state.ReviewDecision{Rationale: reason, ResolvedBy: string(review.System), DecidedAt: env.Now}
	return closeLibraryReview(st, env, r, "withdrawn")
}

// Review reads one review of a library flow.
func (l *Library) Review(ctx context.Context, flowID, reviewID string) (*state.LibraryReview, error) {
	st, err := l.svc.Query().Get(ctx, flowID)
	if err != nil {
		return nil, err
	}
	r := st.Library.Review(reviewID)
	if r == nil {
		return nil, fmt.Errorf("flow %s: review %s: %w", flowID, reviewID, ErrNotFound)
	}
	return r.Clone(), nil
}

// libraryPendingReviews are the open reviews of a library flow as reviewers
// see them, oldest first.
func libraryPendingReviews(st *state.FlowState) []review.PendingReview {
	if st.Status.Finished() {
		return nil
	}
	var out []review.PendingReview
	for _, r := range st.Library.OpenReviews() {
		pr := review.PendingReview{
			ReviewID:  review.ID(st.FlowID, r.ID, 0),
			FlowID:    st.FlowID,
			FlowName:  st.FlowName,
			StepID:    r.ID,
			Question:  r.Question,
			Trigger:   r.Trigger,
			Artifacts: review.Artifacts{Inputs: st.Inputs, Values: state.CloneObject(r.Artifacts)},
			Outcomes:  []review.Outcome{review.Approve, review.Kill},
			Approver:  review.Approver(r.Approver),
			OpenedAt:  r.OpenedAt,
			Deadline:  state.ClonePtr(r.Deadline),
			OnTimeout: review.Kill,
			Options:   state.CloneRaws(r.Options),
			Schema:    state.CloneObject(r.Schema),
			Library:   true,
		}
		if r.OnTimeout != nil {
			pr.OnTimeout = review.Approve
		}
		out = append(out, pr)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].OpenedAt.Before(out[j].OpenedAt) })
	return out
}
