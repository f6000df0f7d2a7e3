package stratum

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/internal/libreview"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
)

// Resolution is a decision a program makes on a review itself (Resolve):
// the review approved with a value.
type Resolution struct {
	// ReviewID is the review decided (PendingReview.ReviewID).
	ReviewID string
	// Value is the decided value as JSON, checked as any decision is: one
	// of the review's options, or a value of the review's type.
	Value json.RawMessage
	// Reviewer names who decided ("": the current user).
	Reviewer string
	// Rationale says why (optional).
	Rationale string
}

// Resolve decides a review in-process, for a program that asks its
// reviewers itself (a sink's web form, a chat bot). With a Store the
// decision is recorded in the store (channel "program"), first decision
// wins; an error matching review.ErrAlreadyDecided means someone decided
// first.
//
// A review with Approver "human" is refused, and nothing is recorded: a
// program cannot show that a person decided (an agent can write and run
// one). The error matches review.ErrNotAllowed (error_type
// gate_requires_human, as over MCP); such a review is decided in `stratum
// tui`, with `stratum gate` on a terminal, or on the console sink. The gate
// of a spec's flow (a *.stratum.yaml run by the CLI or an agent) is not a
// program's to decide: it is refused, and nothing is recorded.
func (rt *Runtime) Resolve(ctx context.Context, r Resolution) error {
	return rt.decide(ctx, r.ReviewID, review.Decision{Outcome: review.Approve, Value: r.Value,
		Reviewer: r.Reviewer, Rationale: r.Rationale, Channel: ChannelProgram})
}

// decide records d on the review reviewID (in the store, or in memory).
func (rt *Runtime) decide(ctx context.Context, reviewID string, d review.Decision) error {
	if d.Reviewer == "" {
		d.Reviewer = review.CurrentUser()
	}
	d.ResolvedBy = review.Human
	h := &rt.reviews
	h.mu.Lock()
	m := h.mem[reviewID]
	if m != nil {
		defer h.mu.Unlock()
		if m.r.Status != state.ReviewOpen {
			return fmt.Errorf("stratum: review %s: %w (%s)", reviewID, review.ErrAlreadyDecided, m.r.Status)
		}
		if err := review.Approver(m.r.Approver).CheckChannel(d.Channel, "Review '"+reviewID+"'"); err != nil {
			// The engine's refusal, as for a review in the store.
			return fmt.Errorf("stratum: review %s: %w", reviewID, &engine.Error{Type: engine.ErrTypeGateRequiresHuman, Message: err.Error()})
		}
		if err := libreview.Decide(m.r, d, rt.opts.Now().UTC()); err != nil {
			return fmt.Errorf("stratum: review %s: %v; the review stays open", reviewID, err)
		}
		close(m.done)
		return nil
	}
	h.mu.Unlock()
	s := h.store
	if s == nil {
		return fmt.Errorf("stratum: no open review %s", reviewID)
	}
	flowID, stepID, ok := splitReviewID(reviewID)
	if !ok {
		return fmt.Errorf("stratum: %q is not a review id (FLOW/STEP/ROUND)", reviewID)
	}
	d.StepID = stepID
	if err := review.Check(d); err != nil {
		return fmt.Errorf("stratum: review %s: %w", reviewID, err)
	}
	st, err := s.svc.Query().Get(ctx, flowID)
	if err != nil {
		return fmt.Errorf("stratum: review %s: %w", reviewID, err)
	}
	if !st.IsLibrary() {
		return specGateRefusal(reviewID, st, d)
	}
	return s.write(flowID, func() error {
		_, err := s.svc.GateResolve(ctx, flowID, d)
		if err != nil {
			return fmt.Errorf("stratum: review %s: %w", reviewID, err)
		}
		return nil
	})
}

// specGateRefusal is decide's answer for the gate of a spec's flow in the
// store: a program links no spec parser (nor the expression language a
// spec's flow runs on), so such a gate is decided where specs run — with
// `stratum gate`, in `stratum tui` or over MCP — and nothing is recorded.
// An approver: human gate is refused as any program's decision on a
// human review is (gate_requires_human).
func specGateRefusal(reviewID string, st *state.FlowState, d review.Decision) error {
	if g := st.Gate; g != nil && g.StepID == d.StepID {
		if err := review.Approver(g.Approver).CheckChannel(d.Channel, "Gate '"+g.StepID+"'"); err != nil {
			return fmt.Errorf("stratum: review %s: %w", reviewID, &engine.Error{Type: engine.ErrTypeGateRequiresHuman, Message: err.Error()})
		}
	}
	return fmt.Errorf("stratum: review %s: flow %s runs a spec; decide its gate with `stratum gate`, in `stratum tui` or over MCP", reviewID, st.FlowID)
}

// splitReviewID splits FLOW/STEP/ROUND.
func splitReviewID(id string) (flowID, stepID string, ok bool) {
	i, j := strings.Index(id, "/"), strings.LastIndex(id, "/")
	if i <= 0 || j <= i+1 {
		return "", "", false
	}
	if _, err := strconv.Atoi(id[j+1:]); err != nil {
		return "", "", false
	}
	return id[:i], id[i+1 : j], true
}
