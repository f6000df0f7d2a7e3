package stratum

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/internal/libreview"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/specs"
)

// Review asks a human for a value of type T.
type Review[T any] struct {
	// Question is what the reviewer is asked.
	Question string
	// Trigger says why the review was opened: "explicit" (the default),
	// "debate_disagreement", any string.
	Trigger string
	// Artifacts are shown to the reviewer (JSON-encodable values).
	Artifacts map[string]any
	// Options are the values the reviewer picks from, numbered from 1 on
	// screen and on the command line; nil: any value of T (checked against
	// T's JSON Schema).
	Options []T
	// Timeout is wall clock, persisted with the review (a restarted
	// process sees the same deadline); 0: none. Time spent waiting is not
	// charged to the flow's time budget.
	Timeout time.Duration
	// OnTimeout is the value a timeout decides; nil: a timeout is a
	// *ReviewTimeoutError. It must be one of Options, or fit T; it is
	// refused with Approver "human".
	OnTimeout *T
	// Approver "human": only a person may decide — in `stratum tui`, with
	// `stratum gate` on a terminal after a typed confirmation, or on the
	// console sink likewise — never an agent over MCP, a Go program
	// (Runtime.Resolve, a ReviewSink) or a deadline (OnTimeout is
	// refused). "" or "any" (review.AnyApprover): any of these may decide.
	Approver review.Approver
}

// HumanDecision is a review's decision.
type HumanDecision[T any] struct {
	Value     T
	Reviewer  string
	Rationale string
	DecidedAt time.Time
	ReviewID  string
	// Channel is how the decision arrived: "tui", "cli", "mcp", "console",
	// "program" (Runtime.Resolve) or "auto" (OnTimeout).
	Channel string
}

// ReviewSink is told about every review that opens, after it is
// persisted when the Runtime has a Store. A sink never decides by
// returning: whoever decides calls Runtime.Resolve (or decides in the
// store: the TUI, `stratum gate`, MCP). A review with Approver "human" is
// shown to a sink but cannot be decided through it: Resolve refuses it.
// Emit should not block for long.
type ReviewSink interface {
	Emit(ctx context.Context, p PendingReview) error
}

// PendingReview is a review as sinks see it. Options are JSON values
// (numbered from 1 for reviewers); ExpiresAt is zero without a timeout.
type PendingReview struct {
	ReviewID, Question, Trigger string
	Artifacts                   map[string]any
	Options                     []json.RawMessage
	ExpiresAt                   time.Time
}

// ChannelProgram is the channel of a decision made with Runtime.Resolve.
const ChannelProgram = review.ChannelProgram

// reviewHub is the Runtime's review side: the store's (store, set by
// attachStore) or, without a store, the reviews kept in memory.
type reviewHub struct {
	store *storeRecorder

	// The console sink's input and output (nil: os.Stdin and os.Stderr);
	// it decides only when both are a terminal (review.IsTerminal).
	consoleIn, consoleOut *os.File

	mu    sync.Mutex
	mem   map[string]*memReview // reviews without a store, by review id
	count int                   // reviews opened without a store (their console name)
}

// memReview is a review kept in memory (no store).
type memReview struct {
	r    *state.LibraryReview
	done chan struct{} // closed once r is closed
}

// AwaitHuman opens a review and waits for its decision. With a Store the
// review is persisted first (a gate of the current flow, or of a flow of
// its own outside Flow.Run) and is decided in the store: in `stratum tui`,
// with `stratum gate approve FLOW STEP --option N|--value JSON` or
// `reject`, over MCP, or with Runtime.Resolve; Options.Sinks are told
// after it is persisted. Without a Store it is kept in memory and decided
// with Runtime.Resolve (Sinks are told), or, without Sinks, on the
// console: stdin and stderr must be a terminal, else AwaitHuman fails at
// once ("nobody can decide this review here"). A review with Approver
// "human" is decided only by a person: never over MCP or by a program.
//
// A value that is not one of Options or does not fit T is refused and the
// review stays open; the first decision wins. A rejection is a
// *ReviewRejectedError with the rationale; a timeout decides *OnTimeout
// (Reviewer "auto", Rationale "timeout", Channel "auto") or is a
// *ReviewTimeoutError. When ctx ends first the review is withdrawn and
// ctx's error returned. Waiting uses the store's events and a deadline
// timer, never polling, and is not charged to the flow's time budget.
func AwaitHuman[T any](ctx context.Context, r Review[T]) (HumanDecision[T], error) {
	var zero HumanDecision[T]
	rt, err := runtimeFrom(ctx)
	if f := flowFrom(ctx); f != nil && f.rt != nil {
		rt, err = f.rt, nil
	}
	if err != nil {
		return zero, err
	}
	req, err := reviewRequest(r)
	if err != nil {
		return zero, err
	}
	// Time spent waiting for a person is not charged to the flow's budget.
	if f := flowFrom(ctx); f != nil {
		defer f.humanWait(rt.opts.Now)()
	}
	reviewID, closed, err := rt.awaitReview(ctx, req)
	if err != nil {
		return zero, err
	}
	return decisionOf[T](reviewID, closed)
}

// reviewRequest is the review as the engine stores it: options, the value
// on timeout and T's schema as JSON.
func reviewRequest[T any](r Review[T]) (engine.ReviewRequest, error) {
	if strings.TrimSpace(r.Question) == "" {
		return engine.ReviewRequest{}, fmt.Errorf("%w: AwaitHuman: the review has no question", ErrStratum)
	}
	if r.Timeout < 0 {
		return engine.ReviewRequest{}, fmt.Errorf("%w: AwaitHuman: negative timeout %s", ErrStratum, r.Timeout)
	}
	if r.Approver != "" && r.Approver != review.AnyApprover && r.Approver != review.HumanApprover {
		return engine.ReviewRequest{}, fmt.Errorf("%w: AwaitHuman: approver must be \"any\" or \"human\", got %q", ErrStratum, r.Approver)
	}
	schema, err := SchemaFor[T]()
	if err != nil {
		return engine.ReviewRequest{}, fmt.Errorf("stratum: AwaitHuman: %w", err)
	}
	req := engine.ReviewRequest{Question: r.Question, Trigger: r.Trigger, Schema: schema, Approver: string(r.Approver), Timeout: r.Timeout}
	if r.Artifacts != nil {
		req.Artifacts, _ = jsonValue(r.Artifacts).(map[string]any)
	}
	for i, o := range r.Options {
		b, err := json.Marshal(o)
		if err != nil {
			return engine.ReviewRequest{}, fmt.Errorf("%w: AwaitHuman: option %d: %v", ErrStratum, i+1, err)
		}
		req.Options = append(req.Options, b)
	}
	if r.OnTimeout != nil {
		b, err := json.Marshal(*r.OnTimeout)
		if err != nil {
			return engine.ReviewRequest{}, fmt.Errorf("%w: AwaitHuman: OnTimeout: %v", ErrStratum, err)
		}
		req.OnTimeout = b
	}
	return req, nil
}

// decisionOf turns a closed review into AwaitHuman's answer.
func decisionOf[T any](reviewID string, r *state.LibraryReview) (HumanDecision[T], error) {
	var out HumanDecision[T]
	d := r.Decision
	if d == nil {
		d = &state.ReviewDecision{}
	}
	switch {
	case r.Status == state.ReviewRejected:
		return out, &ReviewRejectedError{ReviewID: reviewID, Reviewer: d.Reviewer, Rationale: d.Rationale}
	case r.Status == state.ReviewTimedOut && d.Value == nil:
		return out, &ReviewTimeoutError{ReviewID: reviewID, Question: r.Question}
	case r.Status == state.ReviewWithdrawn:
		return out, fmt.Errorf("stratum: review %s was withdrawn: %s", reviewID, d.Rationale)
	}
	if err := json.Unmarshal(d.Value, &out.Value); err != nil {
		return out, fmt.Errorf("stratum: review %s: the decided value does not decode: %w", reviewID, err)
	}
	out.Reviewer, out.Rationale, out.DecidedAt, out.ReviewID, out.Channel = d.Reviewer, d.Rationale, d.DecidedAt, reviewID, d.Channel
	if r.Status == state.ReviewTimedOut {
		out.Channel = "auto"
	}
	return out, nil
}

// awaitReview opens the review, tells the sinks and waits until it is
// closed; it answers the review id and the closed review.
func (rt *Runtime) awaitReview(ctx context.Context, req engine.ReviewRequest) (string, *state.LibraryReview, error) {
	if err := ctx.Err(); err != nil {
		return "", nil, err
	}
	if s := rt.reviews.store; s != nil {
		return rt.awaitStored(ctx, s, req)
	}
	return rt.awaitInMemory(ctx, req)
}

// awaitStored is AwaitHuman with a store.
func (rt *Runtime) awaitStored(ctx context.Context, s *storeRecorder, req engine.ReviewRequest) (reviewID string, closed *state.LibraryReview, err error) {
	flowID := ""
	if f := flowFrom(ctx); f != nil && f.rt == rt {
		flowID = f.id
	} else {
		// A review outside Flow.Run gets a flow of its own.
		flowID, err = s.startFlow(ctx, "review", map[string]any{"question": req.Question})
		if err != nil {
			return "", nil, err
		}
		defer func() {
			// The flow ends as the review did: complete with the value,
			// failed when nothing was decided.
			var out any
			failure := err
			switch {
			case closed == nil:
			case closed.Decision != nil && closed.Decision.Value != nil:
				out = json.RawMessage(closed.Decision.Value)
			case failure == nil:
				failure = fmt.Errorf("review %s", closed.Status)
			}
			if ferr := s.finishFlow(ctx, flowID, out, failure); ferr != nil && err == nil {
				err = ferr
			}
		}()
	}
	seq, err := s.svc.Query().LastSeq(ctx)
	if err != nil {
		return "", nil, fmt.Errorf("stratum: AwaitHuman: %w", err)
	}
	var opened *state.LibraryReview
	err = s.write(flowID, func() (err error) {
		opened, err = s.lib.OpenReview(ctx, flowID, req)
		return err
	})
	if err != nil {
		return "", nil, fmt.Errorf("%w: AwaitHuman: %w", ErrStratum, err)
	}
	reviewID = review.ID(flowID, opened.ID, 0)
	rt.tellSinks(ctx, pendingOf(reviewID, opened))
	closed, err = s.wait(ctx, flowID, opened, seq, rt.opts.Now)
	return reviewID, closed, err
}

// wait follows the store's events (this process's at once, other
// processes' through the store's Watch) until the review is closed, with a
// timer for its deadline; when ctx ends first the review is withdrawn. The
// closed review is read from its gate_resolved event (engine.ReviewNews);
// the flow is read only when the events do not tell (its flow finished,
// an older build's event) and when the deadline passes.
func (s *storeRecorder) wait(ctx context.Context, flowID string, r *state.LibraryReview, after uint64, now func() time.Time) (*state.LibraryReview, error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, err := s.svc.Watch(wctx, after)
	if err != nil {
		return nil, err
	}
	var deadline <-chan time.Time
	if r.Deadline != nil {
		t := time.NewTimer(r.Deadline.Sub(now()))
		defer t.Stop()
		deadline = t.C
	}
	read := func() (*state.LibraryReview, bool, error) {
		got, err := s.lib.Review(context.WithoutCancel(ctx), flowID, r.ID)
		if err != nil {
			return nil, false, fmt.Errorf("stratum: AwaitHuman: %w", err)
		}
		return got, got.Status != state.ReviewOpen, nil
	}
	for {
		select {
		case batch, ok := <-events:
			if !ok {
				events = nil // ctx ended: the next round withdraws
				continue
			}
			status, d, reread := engine.ReviewNews(batch, flowID, r.ID)
			if d != nil {
				closed := r.Clone()
				closed.Status, closed.Decision = status, d
				return closed, nil
			}
			if !reread {
				continue
			}
			if got, done, err := read(); err != nil || done {
				return got, err
			}
		case <-deadline:
			err := s.write(flowID, func() error {
				_, err := s.svc.CheckTimeouts(context.WithoutCancel(ctx), flowID)
				return err
			})
			if err != nil {
				return nil, fmt.Errorf("stratum: AwaitHuman: %w", err)
			}
			got, done, err := read()
			if err != nil || done {
				return got, err
			}
			// The store's clock is behind ours: look again shortly.
			t := time.NewTimer(10 * time.Millisecond)
			defer t.Stop()
			deadline = t.C
		case <-ctx.Done():
			werr := s.write(flowID, func() error {
				_, err := s.lib.WithdrawReview(context.WithoutCancel(ctx), flowID, r.ID, "the program stopped waiting: "+context.Cause(ctx).Error())
				return err
			})
			return nil, errors.Join(ctx.Err(), werr)
		}
	}
}

func pendingOf(reviewID string, r *state.LibraryReview) PendingReview {
	p := PendingReview{ReviewID: reviewID, Question: r.Question, Trigger: r.Trigger, Artifacts: r.Artifacts, Options: r.Options}
	if r.Deadline != nil {
		p.ExpiresAt = *r.Deadline
	}
	return p
}

// tellSinks tells every sink about a review; a sink's error is a warning
// (the review is persisted and decided elsewhere all the same).
func (rt *Runtime) tellSinks(ctx context.Context, p PendingReview) {
	for _, sink := range rt.opts.Sinks {
		if err := sink.Emit(ctx, p); err != nil {
			rt.warnf("review %s: sink: %v", p.ReviewID, err)
		}
	}
}

// awaitInMemory is AwaitHuman without a store.
func (rt *Runtime) awaitInMemory(ctx context.Context, req engine.ReviewRequest) (string, *state.LibraryReview, error) {
	h := &rt.reviews
	now := rt.opts.Now().UTC()
	reviewID := engine.NewUUID()
	r := &state.LibraryReview{ID: reviewID, Question: req.Question, Trigger: req.Trigger, Artifacts: req.Artifacts,
		Options: req.Options, Schema: req.Schema, Approver: req.Approver, OpenedAt: now, OnTimeout: req.OnTimeout,
		Status: state.ReviewOpen}
	if r.Trigger == "" {
		r.Trigger = "explicit"
	}
	if r.Approver == "" {
		r.Approver = string(review.AnyApprover)
	}
	if req.Timeout > 0 {
		d := now.Add(req.Timeout)
		r.Deadline = &d
	}
	if err := libreview.CheckOpen(r); err != nil {
		return "", nil, fmt.Errorf("%w: AwaitHuman: %v", ErrStratum, err)
	}
	console := len(rt.opts.Sinks) == 0
	if _, _, terminal := h.console(); console && !terminal {
		return "", nil, fmt.Errorf("%w: AwaitHuman %q: nobody can decide this review here: no Store (Options.Store: decide in stratum tui or with stratum gate), "+
			"no Sinks (Options.Sinks), and stdin or stderr is not a terminal for the console", ErrStratum, req.Question)
	}
	m := &memReview{r: r, done: make(chan struct{})}
	h.mu.Lock()
	if h.mem == nil {
		h.mem = map[string]*memReview{}
	}
	h.mem[reviewID] = m
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.mem, reviewID)
		h.mu.Unlock()
	}()
	p := pendingOf(reviewID, r)
	failed := make(chan error, 1)
	if console {
		h.mu.Lock()
		h.count++
		name := "review-" + strconv.Itoa(h.count)
		h.mu.Unlock()
		pr := consoleReview(ctx, reviewID, name, r)
		go func() { failed <- rt.console(ctx, pr) }()
	}
	rt.tellSinks(ctx, p)
	var deadline <-chan time.Time
	if r.Deadline != nil {
		t := time.NewTimer(r.Deadline.Sub(rt.opts.Now()))
		defer t.Stop()
		deadline = t.C
	}
	for {
		select {
		case <-m.done:
			return reviewID, h.closed(m), nil
		case err := <-failed:
			if err != nil {
				h.withdraw(m, now, err.Error())
				return "", nil, err
			}
		case <-deadline:
			h.mu.Lock()
			if _, ok := libreview.Expire(m.r, rt.opts.Now().UTC()); ok {
				close(m.done)
			}
			h.mu.Unlock()
			if !h.isClosed(m) {
				t := time.NewTimer(10 * time.Millisecond)
				defer t.Stop()
				deadline = t.C
			}
		case <-ctx.Done():
			h.withdraw(m, rt.opts.Now().UTC(), "the program stopped waiting")
			return "", nil, ctx.Err()
		}
	}
}

// console returns the console sink's input and output, and whether both
// are a terminal (a person may be there).
func (h *reviewHub) console() (in, out *os.File, terminal bool) {
	in, out = h.consoleIn, h.consoleOut
	if in == nil {
		in = os.Stdin
	}
	if out == nil {
		out = os.Stderr
	}
	return in, out, review.IsTerminal(in) && review.IsTerminal(out)
}

func (h *reviewHub) closed(m *memReview) *state.LibraryReview {
	h.mu.Lock()
	defer h.mu.Unlock()
	return m.r.Clone()
}

func (h *reviewHub) isClosed(m *memReview) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return m.r.Status != state.ReviewOpen
}

func (h *reviewHub) withdraw(m *memReview, now time.Time, reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if m.r.Status == state.ReviewOpen {
		m.r.Status = state.ReviewWithdrawn
		m.r.Decision = &state.ReviewDecision{Rationale: reason, ResolvedBy: string(review.System), DecidedAt: now}
		close(m.done)
	}
}

// consoleReview is an in-memory review as the console shows it: named
// name (review-N, counted in the Runtime), a review of the current flow,
// else of a flow of its own, the review's id (the name or the short id
// confirms an Approver "human" review).
func consoleReview(ctx context.Context, reviewID, name string, r *state.LibraryReview) review.PendingReview {
	flowID := reviewID
	if f := flowFrom(ctx); f != nil {
		flowID = f.id
	}
	return review.PendingReview{ReviewID: reviewID, FlowID: flowID, StepID: name, Question: r.Question,
		Artifacts: review.Artifacts{Values: r.Artifacts}, Outcomes: []review.Outcome{review.Approve, review.Kill},
		Approver: review.Approver(r.Approver), OpenedAt: r.OpenedAt, Deadline: r.Deadline,
		Library: true, Trigger: r.Trigger, Options: r.Options, Schema: r.Schema}
}

// console is the console sink (the review asked on the terminal): it
// shows the review on stderr and reads the decision from stdin with
// review.Console — an option's number or a JSON value, or reject, then a
// rationale and, for Approver "human", the typed confirmation — asking
// again until the decision is accepted. It decides only when stdin and
// stderr are a terminal; it ends when the review is closed (by it or
// anyone), or with an error when the input ends: nobody can decide.
func (rt *Runtime) console(ctx context.Context, p review.PendingReview) error {
	in, out, terminal := rt.reviews.console()
	c := &review.Console{In: in, Out: out, Reviewer: review.CurrentUser(), Escape: specs.EscapeControl, Terminal: terminal}
	for {
		d, err := c.Handle(ctx, p)
		switch {
		case errors.Is(err, review.ErrNotConfirmed):
			fmt.Fprintln(out, err)
			continue
		case errors.Is(err, review.ErrNeedsTerminal):
			return fmt.Errorf("%w: review %s: nobody can decide this review here: %w", ErrStratum, p.ReviewID, err)
		case err != nil:
			return fmt.Errorf("%w: review %s: the console ended without a decision: nobody can decide this review here (%w)", ErrStratum, p.ReviewID, err)
		}
		err = rt.decide(ctx, p.ReviewID, d)
		if err == nil || errors.Is(err, review.ErrAlreadyDecided) {
			return nil
		}
		fmt.Fprintln(out, err)
	}
}
