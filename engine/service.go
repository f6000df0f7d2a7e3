package engine

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/specs"
)

// Service runs the transitions against a Store: one Store.Update per call
// (View for reads), the flow's raw spec parsed (and cached by content), the
// results persisted and the events appended in the same transaction. Every
// method returns the wire response; the error is only for store failures.
type Service struct {
	Store Store
	Now   func() time.Time // default time.Now
	NewID func() string    // default random UUIDv4 (crypto/rand)
	Root  string           // expression file root
	// Notify, when set, is called after every committed transition with the
	// events it appended, in order (their Seq is assigned inside the store
	// and is zero here). It runs after the transaction, in the caller's
	// goroutine, and must not block.
	Notify func(events []Event)

	mu    sync.Mutex
	specs map[[32]byte]*specs.Spec
	order [][32]byte
}

// specCacheSize bounds the parsed-spec cache.
const specCacheSize = 64

// ReportOptions identify who reports into a flow. A flow whose runner lease
// is live refuses reports from anyone but the lease holder.
type ReportOptions struct {
	// Actor is the lease id of the caller ("" = an agent without a lease).
	Actor string
}

// errNoWrite aborts a store transaction without writing; the response has
// already been captured.
var errNoWrite = errors.New("no write")

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now().UTC()
}

func (s *Service) newID() string {
	if s.NewID != nil {
		return s.NewID()
	}
	return NewUUID()
}

// NewUUID returns a random (version 4) UUID string.
func NewUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// parse parses a spec text, caching the result by the sha256 of the text.
func (s *Service) parse(file, text string) (*specs.Spec, specs.Diagnostics) {
	key := sha256.Sum256([]byte(text))
	s.mu.Lock()
	if sp, ok := s.specs[key]; ok {
		s.mu.Unlock()
		return sp, nil
	}
	s.mu.Unlock()
	sp, ds := parseSpec(file, []byte(text))
	if sp == nil || ds.HasErrors() {
		return nil, ds
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.specs == nil {
		s.specs = map[[32]byte]*specs.Spec{}
	}
	if _, ok := s.specs[key]; !ok {
		if len(s.order) >= specCacheSize {
			delete(s.specs, s.order[0])
			s.order = s.order[1:]
		}
		s.specs[key] = sp
		s.order = append(s.order, key)
	}
	return sp, ds
}

// specErrorResponse is the original's translated exception for an invalid
// spec: {status:"error", success:false, error_type, message, path,
// suggestion} from the first error, plus ours: diagnostics (all of them).
func specErrorResponse(ds specs.Diagnostics) Response {
	errs := ds.Errors()
	if len(errs) == 0 {
		return executionError("invalid spec")
	}
	d := errs[0]
	r := Response{"status": "error", "success": false, "error_type": string(d.ErrorType), "message": d.Message, "path": d.Path, "diagnostics": []specs.Diagnostic(errs)}
	if r["error_type"] == "" {
		r["error_type"] = string(specs.SemanticError)
	}
	if d.Suggestion != "" {
		r["suggestion"] = d.Suggestion
	}
	return r
}

// plausibleFlowID rejects ids no store can hold (empty, very long, NUL
// bytes), so they answer flow_not_found instead of a store error.
func plausibleFlowID(id string) bool {
	return id != "" && len(id) <= 512 && !strings.ContainsRune(id, 0)
}

func flowNotFound(flowID string) Response {
	return errorResponse(ErrTypeFlowNotFound, fmt.Sprintf("No active flow with id '%s'", flowID), nil)
}

// env builds the transition environment of a stored flow. A spec that no
// longer parses, or a flow that vanished from it, is an execution_error.
func (s *Service) env(st *FlowState, tx Tx, now time.Time) (Env, Response) {
	sp, ds := s.parse(st.SpecFile, st.RawSpec)
	if sp == nil {
		msg := "stored spec of flow '" + st.FlowID + "' no longer parses"
		if errs := ds.Errors(); len(errs) > 0 {
			msg += ": " + errs[0].Message
		}
		return Env{}, executionError(msg)
	}
	flow := sp.Flows[st.FlowName]
	if flow == nil {
		return Env{}, executionError(fmt.Sprintf("Flow '%s' not found in spec", st.FlowName))
	}
	return Env{Spec: sp, Flow: flow, Now: now, NewID: s.newID, Root: s.Root, Children: tx}, nil
}

// leaseRefusal answers flow_owned when a live runner lease owns the flow and
// the caller is not its holder.
func leaseRefusal(st *FlowState, now time.Time, actor string) Response {
	if st.Owner == nil || !st.Owner.ExpiresAt.After(now) || st.Owner.ID == actor {
		return nil
	}
	return errorResponse(ErrTypeFlowOwned, fmt.Sprintf(
		"Flow '%s' is driven by an in-process runner (lease '%s' until %s); agent reports are refused while the lease is live",
		st.FlowID, st.Owner.ID, st.Owner.ExpiresAt.UTC().Format(time.RFC3339)),
		map[string]any{"flow_id": st.FlowID, "owner": st.Owner.ID})
}

// transition loads a flow, runs fn and commits its result in one Update.
// checkLease, when set, refuses callers other than a live lease's holder.
func (s *Service) transition(ctx context.Context, flowID string, checkLease *ReportOptions, fn func(st *FlowState, env Env) (Result, error)) (Response, error) {
	if !plausibleFlowID(flowID) {
		return flowNotFound(flowID), nil
	}
	var resp Response
	var events []Event
	err := s.Store.Update(ctx, func(tx Tx) (err error) {
		resp, events = nil, nil
		defer func() {
			if r := recover(); r != nil {
				resp = internalError()
				err = errNoWrite
			}
		}()
		now := s.now()
		st, err := tx.Get(flowID)
		if errors.Is(err, ErrNotFound) {
			resp = flowNotFound(flowID)
			return errNoWrite
		}
		if err != nil {
			return err
		}
		if checkLease != nil {
			if r := leaseRefusal(st, now, checkLease.Actor); r != nil {
				resp = r
				return errNoWrite
			}
		}
		env, bad := s.env(st, tx, now)
		if bad != nil {
			resp = bad
			return errNoWrite
		}
		res, err := fn(st, env)
		if err != nil {
			var ee *ExecError
			if errors.As(err, &ee) {
				resp = executionError(ee.Message)
				return errNoWrite
			}
			return err
		}
		resp = res.Response
		if res.Unchanged {
			return errNoWrite
		}
		events = res.Events
		return commitResult(tx, st, res)
	})
	if errors.Is(err, errNoWrite) {
		return resp, nil
	}
	if err != nil {
		return nil, err
	}
	s.notify(events)
	return resp, nil
}

func (s *Service) notify(events []Event) {
	if s.Notify != nil && len(events) > 0 {
		s.Notify(events)
	}
}

// commitResult writes a transition's effects: other flows, deletions, the
// flow itself, then the events.
func commitResult(tx Tx, st *FlowState, res Result) error {
	for _, p := range res.Put {
		if err := tx.Put(p); err != nil {
			return err
		}
	}
	for _, id := range res.Delete {
		if err := tx.Delete(id); err != nil {
			return err
		}
	}
	if st != nil {
		if err := tx.Put(st); err != nil {
			return err
		}
	}
	if len(res.Events) > 0 {
		return tx.Append(res.Events...)
	}
	return nil
}

// Plan is stratum_plan: parse the spec, create the flow, return its first
// dispatch (or completion). An invalid spec answers the original's ir_*
// error envelope.
func (s *Service) Plan(ctx context.Context, specText, flowName string, inputs map[string]any, opt PlanOptions) (Response, error) {
	sp, ds := s.parse(opt.SpecFile, specText)
	if sp == nil {
		return specErrorResponse(ds), nil
	}
	if inputs == nil {
		inputs = map[string]any{}
	}
	var resp Response
	var events []Event
	err := s.Store.Update(ctx, func(tx Tx) (err error) {
		resp, events = nil, nil
		defer func() {
			if r := recover(); r != nil {
				resp = internalError()
				err = errNoWrite
			}
		}()
		env := Env{Spec: sp, Now: s.now(), NewID: s.newID, Root: s.Root, Children: tx}
		st, res, err := Plan(env, flowName, inputs, opt)
		if err != nil {
			var ee *ExecError
			if errors.As(err, &ee) {
				resp = executionError(ee.Message)
				return errNoWrite
			}
			return err
		}
		resp = res.Response
		if st == nil {
			return errNoWrite
		}
		events = res.Events
		return commitResult(tx, st, res)
	})
	if errors.Is(err, errNoWrite) {
		return resp, nil
	}
	if err != nil {
		return nil, err
	}
	s.notify(events)
	return resp, nil
}

// Resume is stratum_resume.
func (s *Service) Resume(ctx context.Context, flowID string) (Response, error) {
	return s.transition(ctx, flowID, nil, Resume)
}

// StepDone is stratum_step_done.
func (s *Service) StepDone(ctx context.Context, flowID, stepID string, result any, opt ReportOptions) (Response, error) {
	return s.transition(ctx, flowID, &opt, func(st *FlowState, env Env) (Result, error) {
		return StepDone(st, env, stepID, result)
	})
}

// ParallelDone is stratum_parallel_done.
func (s *Service) ParallelDone(ctx context.Context, flowID, stepID string, taskResults []any, mergeStatus any, opt ReportOptions) (Response, error) {
	return s.transition(ctx, flowID, &opt, func(st *FlowState, env Env) (Result, error) {
		return ParallelDone(st, env, stepID, taskResults, mergeStatus)
	})
}

// GateResolve is stratum_gate_resolve. d.StepID names the gate; d.Channel
// says how the decision arrived (approver: human gates refuse mcp).
func (s *Service) GateResolve(ctx context.Context, flowID string, d review.Decision) (Response, error) {
	d.FlowID = flowID
	return s.transition(ctx, flowID, nil, func(st *FlowState, env Env) (Result, error) {
		if d.DecidedAt.IsZero() {
			d.DecidedAt = env.Now
		}
		return GateResolve(st, env, d)
	})
}

// CheckTimeouts is stratum_check_timeouts.
func (s *Service) CheckTimeouts(ctx context.Context, flowID string) (Response, error) {
	return s.transition(ctx, flowID, nil, CheckTimeouts)
}

// SweepTimeouts applies every expired gate deadline in the store (any
// process may call it) and returns how many gates it resolved.
func (s *Service) SweepTimeouts(ctx context.Context) (int, error) {
	var pending []FlowSummary
	if err := s.Store.View(ctx, func(tx Tx) error {
		var err error
		pending, err = tx.PendingGates()
		return err
	}); err != nil {
		return 0, err
	}
	now := s.now()
	n := 0
	for _, p := range pending {
		if p.Gate == nil || p.Gate.Deadline == nil || p.Gate.Deadline.After(now) {
			continue
		}
		resp, err := s.CheckTimeouts(ctx, p.FlowID)
		if err != nil {
			return n, err
		}
		if st, _ := resp["status"].(string); st != "no_timeout" && st != "error" {
			n++
		}
	}
	return n, nil
}

// SkipStep is stratum_skip_step.
func (s *Service) SkipStep(ctx context.Context, flowID, stepID, reason string, opt ReportOptions) (Response, error) {
	return s.transition(ctx, flowID, &opt, func(st *FlowState, env Env) (Result, error) {
		return SkipStep(st, env, stepID, reason)
	})
}

// IterationStart is stratum_iteration_start.
func (s *Service) IterationStart(ctx context.Context, flowID, stepID string, opt ReportOptions) (Response, error) {
	return s.transition(ctx, flowID, &opt, func(st *FlowState, env Env) (Result, error) {
		return IterationStart(st, env, stepID)
	})
}

// IterationReport is stratum_iteration_report.
func (s *Service) IterationReport(ctx context.Context, flowID, stepID string, result any, opt ReportOptions) (Response, error) {
	return s.transition(ctx, flowID, &opt, func(st *FlowState, env Env) (Result, error) {
		return IterationReport(st, env, stepID, result)
	})
}

// IterationAbort is stratum_iteration_abort.
func (s *Service) IterationAbort(ctx context.Context, flowID, stepID, reason string, opt ReportOptions) (Response, error) {
	return s.transition(ctx, flowID, &opt, func(st *FlowState, env Env) (Result, error) {
		return IterationAbort(st, env, stepID, reason)
	})
}

// Commit is stratum_commit.
func (s *Service) Commit(ctx context.Context, flowID, label string) (Response, error) {
	return s.transition(ctx, flowID, nil, func(st *FlowState, env Env) (Result, error) {
		return Commit(st, env, label)
	})
}

// Revert is stratum_revert.
func (s *Service) Revert(ctx context.Context, flowID, label string) (Response, error) {
	return s.transition(ctx, flowID, nil, func(st *FlowState, env Env) (Result, error) {
		return Revert(st, env, label)
	})
}

// Audit is stratum_audit (a read).
func (s *Service) Audit(ctx context.Context, flowID string) (Response, error) {
	if !plausibleFlowID(flowID) {
		return flowNotFound(flowID), nil
	}
	var resp Response
	err := s.Store.View(ctx, func(tx Tx) error {
		st, err := tx.Get(flowID)
		if errors.Is(err, ErrNotFound) {
			resp = flowNotFound(flowID)
			return nil
		}
		if err != nil {
			return err
		}
		env, bad := s.env(st, tx, s.now())
		if bad != nil {
			resp = bad
			return nil
		}
		resp = Audit(st, env)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// Get returns a flow's state (an error wrapping ErrNotFound when unknown).
func (s *Service) Get(ctx context.Context, flowID string) (*FlowState, error) {
	var st *FlowState
	err := s.Store.View(ctx, func(tx Tx) error {
		var err error
		st, err = tx.Get(flowID)
		return err
	})
	return st, err
}

// List returns summaries of the flows matching f, newest first.
func (s *Service) List(ctx context.Context, f ListFilter) ([]FlowSummary, error) {
	var out []FlowSummary
	err := s.Store.View(ctx, func(tx Tx) error {
		var err error
		out, err = tx.List(f)
		return err
	})
	return out, err
}

// PendingGates returns every flow waiting at a gate.
func (s *Service) PendingGates(ctx context.Context) ([]FlowSummary, error) {
	var out []FlowSummary
	err := s.Store.View(ctx, func(tx Tx) error {
		var err error
		out, err = tx.PendingGates()
		return err
	})
	return out, err
}

// ErrLeaseHeld is returned by Claim when another live lease owns the flow.
var ErrLeaseHeld = errors.New("flow is owned by another live lease")

// Claim takes (or renews) the runner lease of a flow: it succeeds when the
// flow has no live lease or the live lease has the same id. The flow's driver
// becomes "runner".
func (s *Service) Claim(ctx context.Context, flowID string, l Lease) error {
	return s.Store.Update(ctx, func(tx Tx) error {
		st, err := tx.Get(flowID)
		if err != nil {
			return err
		}
		now := s.now()
		if st.Owner != nil && st.Owner.ExpiresAt.After(now) && st.Owner.ID != l.ID {
			return fmt.Errorf("flow %s: %w (lease %s until %s)", flowID, ErrLeaseHeld, st.Owner.ID, st.Owner.ExpiresAt.UTC().Format(time.RFC3339))
		}
		if l.Heartbeat.IsZero() {
			l.Heartbeat = now
		}
		st.Owner = &l
		st.Driver = DriverRunner
		return tx.Put(st)
	})
}

// Release drops the flow's lease if it is held by leaseID.
func (s *Service) Release(ctx context.Context, flowID, leaseID string) error {
	return s.Store.Update(ctx, func(tx Tx) error {
		st, err := tx.Get(flowID)
		if err != nil {
			return err
		}
		if st.Owner == nil || st.Owner.ID != leaseID {
			return nil
		}
		st.Owner = nil
		return tx.Put(st)
	})
}
