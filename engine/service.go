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

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/specs"
)

// Service runs the transitions against a Store: each is computed on a
// snapshot outside any write transaction (the flow read in a View, its raw
// spec parsed and cached by content, its expressions evaluated) and
// committed in one Store.Update that re-checks the flow's version (see
// snapshot.go): the results persisted with their summaries (Summarize) and
// the events appended in the same transaction, then published to this
// process's watchers (Watch). Transitions answer an Outcome, or a *Error the original
// answers as an envelope; any other error is a store failure.
type Service struct {
	Store Store
	Now   func() time.Time // default time.Now
	NewID func() string    // default random UUIDv4 (crypto/rand)
	Root  string           // expression file root
	// OnDamaged, when set, is told of each flow whose stored record cannot
	// be decoded (a *DamagedError), once per flow and Service; sweeps and
	// listings skip such flows (damaged.go).
	OnDamaged func(*DamagedError)
	// Invocation is how a person runs this stratum again — "stratum", a
	// binary's path, "go run ." — for the commands its refusals advise
	// (`… gate approve`, `… kill`, `… tui`); "stratum" when empty.
	Invocation string
	// NoResultCache turns off the result cache of agent-driven flows
	// (engine/resultcache.go): their cacheable steps are always dispatched
	// and nothing is cached (the original's STRATUM_DISABLE_RESULT_CACHE).
	// `stratum run`'s own --cache is not affected.
	NoResultCache bool
	// ParseSpec parses (decodes, validates, compiles) the spec of a spec
	// flow: exprlang.ParseSpec (package specs/exprlang), as the CLI, the
	// MCP server and `stratum run` set it. A Service without it runs the
	// flows of Go programs (the library, which so links neither the spec
	// parser nor the expression compiler) and refuses every spec flow
	// with a diagnostic saying so.
	ParseSpec func(file string, src []byte) (*specs.Spec, specs.Diagnostics)

	mu    sync.Mutex
	specs map[[32]byte]parsedSpec
	order [][32]byte
	// last is the valid spec parse returned last, with its text.
	last struct {
		text string
		spec *specs.Spec
	}
	// events publishes committed transitions' events to Watch.
	events broker
	// damaged holds the flows found damaged (damaged.go), guarded by mu.
	damaged map[string]bool
	// own holds the states this Service committed last (owncommits.go).
	own ownCommits
}

// specCacheSize bounds the parsed-spec cache.
const specCacheSize = 64

// ReportOptions identify who reports into a flow, commits or reverts it. A
// flow whose runner lease is live refuses them from anyone but the lease
// holder (flow_owned).
type ReportOptions struct {
	// Actor is the lease id of the caller ("" = an agent without a lease).
	Actor string
	// Channel is how the call arrived (mcp, cli, tui; "" = unknown, which
	// has no more authority than mcp). Only Revert reads it: a revert past a
	// human decision, or away from a pending approver: human gate, needs a
	// human's channel (humanChannel).
	Channel review.Channel
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

// invocation is how the commands a refusal advises start (Invocation).
func (s *Service) invocation() string {
	if s.Invocation == "" {
		return "stratum"
	}
	return s.Invocation
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
	if s.ParseSpec == nil {
		return nil, noParser(file)
	}
	// A valid spec is cached by its text; a failure by its file name and
	// text (its diagnostics name the file), so that thousands of flows
	// stored with one spec that no longer parses cost one parse, not one
	// per flow.
	s.mu.Lock()
	if s.last.spec != nil && s.last.text == text {
		// The spec of the flow parsed last (a run's every transition): the
		// text compared, not hashed (20 KiB at 200 steps).
		sp := s.last.spec
		s.mu.Unlock()
		return sp, nil
	}
	s.mu.Unlock()
	key := sha256.Sum256([]byte(text))
	s.mu.Lock()
	if p, ok := s.specs[key]; ok {
		s.last.text, s.last.spec = text, p.spec
		s.mu.Unlock()
		return p.spec, nil
	}
	s.mu.Unlock()
	// Hashed only when the text is not a cached valid spec: every
	// transition of a flow parses its spec, and the text grows with the
	// flow (20 KiB at 200 steps).
	fkey := sha256.Sum256([]byte(file + "\x00" + text))
	s.mu.Lock()
	if p, ok := s.specs[fkey]; ok {
		s.mu.Unlock()
		return nil, p.diags
	}
	s.mu.Unlock()
	sp, ds := s.ParseSpec(file, []byte(text))
	p, k := parsedSpec{spec: sp}, key
	if sp == nil || ds.HasErrors() {
		p, k, sp = parsedSpec{diags: ds}, fkey, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.specs == nil {
		s.specs = map[[32]byte]parsedSpec{}
	}
	if _, ok := s.specs[k]; !ok {
		if len(s.order) >= specCacheSize {
			delete(s.specs, s.order[0])
			s.order = s.order[1:]
		}
		s.specs[k] = p
		s.order = append(s.order, k)
	}
	return sp, ds
}

// parsedSpec is one entry of the Service's parse cache: a valid spec, or
// the diagnostics of one that does not parse.
type parsedSpec struct {
	spec  *specs.Spec
	diags specs.Diagnostics
}

// specError is the original's translated exception for an invalid spec:
// {status:"error", success:false, error_type, message, path, suggestion}
// from the first error, plus ours: diagnostics (all of them).
func specError(ds specs.Diagnostics) *Error {
	errs := ds.Errors()
	if len(errs) == 0 {
		return execErrorf("invalid spec")
	}
	d := errs[0]
	e := &Error{Type: ErrorType(d.ErrorType), Message: d.Message, Translated: true, Path: d.Path, Suggestion: d.Suggestion, Diagnostics: errs}
	if e.Type == "" {
		e.Type = ErrorType(specs.SemanticError)
	}
	return e
}

// plausibleFlowID rejects ids no store can hold (empty, very long, NUL
// bytes), so they answer flow_not_found instead of a store error.
func plausibleFlowID(id string) bool {
	return id != "" && len(id) <= 512 && !strings.ContainsRune(id, 0)
}

func flowNotFound(flowID string) *Error {
	return refusal(ErrTypeFlowNotFound, "No active flow with id '%s'", flowID)
}

// env builds the transition environment of a stored flow, outside any
// store transaction: children are read through sn, expressions stop when
// ctx is done. A spec that no longer parses, or a flow that vanished from
// it, is an execution_error.
func (s *Service) env(ctx context.Context, st *state.FlowState, sn childLoader, now time.Time) (transitionEnv, *Error) {
	if st.IsLibrary() {
		// A Go program's flow has no spec (library.go).
		return transitionEnv{Ctx: ctx, Now: now, NewID: s.newID, Root: s.Root, Children: sn, Cmd: s.invocation()}, nil
	}
	sp, ds := s.parse(st.SpecFile, st.RawSpec)
	if sp == nil {
		msg := "stored spec of flow '" + st.FlowID + "' no longer parses"
		if errs := ds.Errors(); len(errs) > 0 {
			msg += ": " + errs[0].Message
		}
		return transitionEnv{}, execErrorf("%s", msg)
	}
	flow := sp.Flows[st.FlowName]
	if flow == nil {
		return transitionEnv{}, execErrorf("Flow '%s' not found in spec", st.FlowName)
	}
	return transitionEnv{Ctx: ctx, Spec: sp, Flow: flow, Now: now, NewID: s.newID, Root: s.Root, Children: sn, Cmd: s.invocation(), Cache: s.resultCache(sn)}, nil
}

// resultCache is the result cache transitions read through sn (engine/resultcache.go),
// nil when NoResultCache is set or sn cannot read it.
func (s *Service) resultCache(sn childLoader) cacheReader {
	if s.NoResultCache {
		return nil
	}
	c, _ := sn.(cacheReader)
	return c
}

// leaseRefusal answers flow_owned when a live runner lease owns the flow and
// the caller is not its holder.
func leaseRefusal(st *state.FlowState, now time.Time, actor string) *Error {
	if st.Owner == nil || !st.Owner.ExpiresAt.After(now) || st.Owner.ID == actor {
		return nil
	}
	e := refusal(ErrTypeFlowOwned,
		"Flow '%s' is driven by an in-process runner (lease '%s' until %s); reports, commits and reverts from anyone else are refused while the lease is live",
		st.FlowID, st.Owner.ID, st.Owner.ExpiresAt.UTC().Format(time.RFC3339))
	e.FlowID, e.Owner = st.FlowID, st.Owner.ID
	return e
}

// transition runs fn on a flow (snapshot.go): the flow is read in a View,
// fn runs outside any store transaction on that private copy, and its
// result is committed in one Update if the flow (and every flow fn read)
// is unchanged, else everything is done again. checkLease, when set,
// refuses callers other than a live lease's holder. A library flow
// (library.go) is refused with library_flow.
func (s *Service) transition(ctx context.Context, flowID string, checkLease *ReportOptions, fn func(st *state.FlowState, env transitionEnv) (transitionResult, error)) (Outcome, error) {
	return s.transitionOn(ctx, flowID, checkLease, false, fn)
}

// transitionOn is transition; library says fn also handles library flows
// (gate decisions and timeouts).
func (s *Service) transitionOn(ctx context.Context, flowID string, checkLease *ReportOptions, library bool, fn func(st *state.FlowState, env transitionEnv) (transitionResult, error)) (Outcome, error) {
	return s.transitionWith(ctx, flowID, checkLease, library, retryAtOnce, fn)
}

// transitionWith is transitionOn with a retry policy (retry.go): a
// person's decision retries patiently against a busy writer.
func (s *Service) transitionWith(ctx context.Context, flowID string, checkLease *ReportOptions, library bool, retry retryPolicy, fn func(st *state.FlowState, env transitionEnv) (transitionResult, error)) (Outcome, error) {
	if !plausibleFlowID(flowID) {
		return nil, flowNotFound(flowID)
	}
	return s.optimisticWith(ctx, "flow "+flowID, ownChecked, retry, func(sn *snapshot, now time.Time) (computed, error) {
		st, err := sn.Get(flowID)
		if errors.Is(err, ErrNotFound) {
			return computed{}, flowNotFound(flowID)
		}
		if err != nil {
			return computed{}, err
		}
		if st.IsLibrary() && !library {
			return computed{}, libraryRefusal(st, s.invocation())
		}
		if checkLease != nil {
			if e := leaseRefusal(st, now, checkLease.Actor); e != nil {
				return computed{}, e
			}
		}
		env, bad := s.env(ctx, st, sn, now)
		if bad != nil {
			return computed{}, bad
		}
		res, err := fn(st, env)
		return computed{st: st, sp: env.Spec, res: res}, err
	})
}

// Plan is stratum_plan: parse the spec, create the flow, return its first
// dispatch (or completion). An invalid spec answers the original's ir_*
// error envelope.
func (s *Service) Plan(ctx context.Context, specText, flowName string, inputs map[string]any, opt PlanOptions) (Outcome, error) {
	sp, ds := s.parse(opt.SpecFile, specText)
	if sp == nil {
		return nil, specError(ds)
	}
	if inputs == nil {
		inputs = map[string]any{}
	}
	return s.optimistic(ctx, "plan of flow "+flowName, func(sn *snapshot, now time.Time) (computed, error) {
		env := transitionEnv{Ctx: ctx, Spec: sp, Now: now, NewID: s.newID, Root: s.Root, Children: sn, Cmd: s.invocation(), Cache: s.resultCache(sn)}
		st, res, err := planFlow(env, flowName, inputs, opt)
		if st == nil && err == nil {
			res.Unchanged = true
		}
		return computed{st: st, sp: sp, res: res}, err
	})
}

// Resume is stratum_resume.
func (s *Service) Resume(ctx context.Context, flowID string) (Outcome, error) {
	return s.transition(ctx, flowID, nil, resumeFlow)
}

// GateResolve is stratum_gate_resolve. d.StepID names the gate; d.Channel
// says how the decision arrived (approver: human gates refuse mcp). The
// rule every channel shares, review.Check, is applied first, whoever
// calls: a revise or kill without a rationale is refused
// (rationale_required, nothing read or written), except through MCP.
func (s *Service) GateResolve(ctx context.Context, flowID string, d review.Decision) (Outcome, error) {
	d.FlowID = flowID
	if e := checkDecision(d); e != nil {
		return nil, e
	}
	// A person's decision is not starved by a busy writer of the flow
	// (a program's Calls): it retries patiently (retry.go).
	return s.transitionWith(ctx, flowID, nil, true, retryPatiently, func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		if d.DecidedAt.IsZero() {
			d.DecidedAt = env.Now
		}
		return gateResolve(st, env, d)
	})
}

// CheckTimeouts is stratum_check_timeouts.
func (s *Service) CheckTimeouts(ctx context.Context, flowID string) (Outcome, error) {
	return s.transitionOn(ctx, flowID, nil, true, checkTimeouts)
}

// SweepTimeouts applies every expired gate deadline in the store (any
// process may call it) and returns how many gates it resolved. It reads
// only the gates due (Tx.GatesDue), not every pending one. A flow whose
// record is damaged is skipped (and reported: OnDamaged).
func (s *Service) SweepTimeouts(ctx context.Context) (int, error) {
	now := s.now()
	due, err := s.listing(read(ctx, s, func(tx Tx) ([]state.FlowSummary, error) {
		due, _, err := tx.GatesDue(now)
		return due, err
	}))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range due {
		out, err := s.transitionOn(ctx, p.FlowID, nil, true, applyExpiredTimeout)
		if err != nil {
			if AsError(err) != nil || s.noteDamagedErr(err) {
				continue
			}
			return n, err
		}
		if _, none := out.(*notTimedOut); !none {
			n++
		}
	}
	return n, nil
}

// SkipStep is stratum_skip_step.
func (s *Service) SkipStep(ctx context.Context, flowID, stepID, reason string, opt ReportOptions) (Outcome, error) {
	return s.transition(ctx, flowID, &opt, func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return skipStep(st, env, stepID, reason)
	})
}

// IterationStart is stratum_iteration_start.
func (s *Service) IterationStart(ctx context.Context, flowID, stepID string, opt ReportOptions) (Outcome, error) {
	return s.transition(ctx, flowID, &opt, func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return iterationStart(st, env, stepID)
	})
}

// IterationReport is stratum_iteration_report.
func (s *Service) IterationReport(ctx context.Context, flowID, stepID string, result any, opt ReportOptions) (Outcome, error) {
	return s.transition(ctx, flowID, &opt, func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return iterationReport(st, env, stepID, result)
	})
}

// IterationAbort is stratum_iteration_abort.
func (s *Service) IterationAbort(ctx context.Context, flowID, stepID, reason string, opt ReportOptions) (Outcome, error) {
	return s.transition(ctx, flowID, &opt, func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return iterationAbort(st, env, stepID, reason)
	})
}

// Commit is stratum_commit. A live runner lease refuses it (flow_owned) to
// anyone but its holder.
func (s *Service) Commit(ctx context.Context, flowID, label string, opt ReportOptions) (Outcome, error) {
	return s.transition(ctx, flowID, &opt, func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return commitCheckpoint(st, env, label)
	})
}

// Revert is stratum_revert. A live runner lease refuses it (flow_owned) to
// anyone but its holder: a revert under a running runner would pull the
// flow from under it.
func (s *Service) Revert(ctx context.Context, flowID, label string, opt ReportOptions) (Outcome, error) {
	return s.transition(ctx, flowID, &opt, func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return revertCheckpoint(st, env, label, opt.Channel)
	})
}

// Audit is stratum_audit (a read): the flow is read in a View, the spec
// parsed and the report built after it. When this Service committed the
// flow last, the report is built from its copy, and given once a View
// finds the flow's summary still at that version (owncommits.go).
func (s *Service) Audit(ctx context.Context, flowID string) (*AuditReport, error) {
	if !plausibleFlowID(flowID) {
		return nil, flowNotFound(flowID)
	}
	var out *AuditReport
	_, err := s.optimisticOn(ctx, "audit of flow "+flowID, ownBySummary, func(sn *snapshot, now time.Time) (computed, error) {
		st, err := sn.Get(flowID)
		if errors.Is(err, ErrNotFound) {
			return computed{}, flowNotFound(flowID)
		}
		if err != nil {
			return computed{}, err
		}
		env, bad := s.env(ctx, st, sn, now)
		if bad != nil {
			return computed{}, bad
		}
		out = auditFlow(st, env)
		return computed{res: answer(out)}, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Decide records a gate decision (GateResolve of d.FlowID, first writer
// wins, review.Check applied): it is the engine's review.Decider, what the
// runner's review.Service records through.
func (s *Service) Decide(ctx context.Context, d review.Decision) (Outcome, error) {
	return s.GateResolve(ctx, d.FlowID, d)
}

var _ review.Decider[Outcome] = (*Service)(nil)
