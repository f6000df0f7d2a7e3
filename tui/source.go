package tui

import (
	"context"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
)

// Source is everything the console reads and writes. It is defined here, by
// its consumer; ServiceSource adapts engine.Service to it. Every
// method is called from a tea.Cmd (never from Update) and must be safe for
// concurrent use.
type Source interface {
	// ListFlows returns one page of the flows' summaries in the store's
	// listing order (newest first; engine.ListFilter: Limit flows After a
	// cursor). The console never reads every summary at once
	// (flowwindow.go).
	ListFlows(ctx context.Context, f engine.ListFilter) ([]state.FlowSummary, error)
	// CountFlows returns how many flows the listing f selects holds (its
	// Status and After; not Limit), from the store's indexes: no summary
	// is read.
	CountFlows(ctx context.Context, f engine.ListFilter) (int, error)
	// PendingReviews returns every gate waiting for a decision: question,
	// outcomes, round, approver, deadline, but no Artifacts (read from the
	// flow's state for the gates on screen: gateCtxCmd), so listing
	// thousands of gates reads summaries only.
	PendingReviews(ctx context.Context) ([]review.PendingReview, error)
	// Get returns one flow's state (an error wrapping engine.ErrNotFound
	// when unknown).
	Get(ctx context.Context, flowID string) (*state.FlowState, error)
	// FlowWithSpec returns one flow's state with its flow as the stored
	// spec declares it (Flow nil when that spec no longer parses): a gate's
	// on_revise and the flow's max_rounds.
	FlowWithSpec(ctx context.Context, flowID string) (*engine.FlowWithSpec, error)
	// FlowEvents returns every event of one flow, in sequence order.
	FlowEvents(ctx context.Context, flowID string) ([]engine.Event, error)
	// LastSeq is the last sequence number assigned (0 for an empty log).
	LastSeq(ctx context.Context) (uint64, error)
	// Watch delivers every batch of new events with a sequence number
	// above after, in order, until ctx ends (then it closes the channel):
	// the live updates, from this process and every other one.
	Watch(ctx context.Context, after uint64) (<-chan []engine.Event, error)
	// GateResolve records a decision (first writer wins). A refusal is an
	// *engine.Error.
	GateResolve(ctx context.Context, flowID string, d review.Decision) (engine.Outcome, error)
	// Commit checkpoints a flow under label (a flow a runner owns refuses
	// it: flow_owned).
	Commit(ctx context.Context, flowID, label string) (engine.Outcome, error)
	// Revert restores a flow to the checkpoint label, with a human's
	// authority (channel tui); a flow a runner owns refuses it: flow_owned.
	Revert(ctx context.Context, flowID, label string) (engine.Outcome, error)
	// Kill ends a flow nothing drives any more (engine.Service.Kill,
	// channel tui), recorded with who and why; a live lease refuses it
	// (flow_owned).
	Kill(ctx context.Context, flowID, by, reason string) (engine.Outcome, error)
}

// ServiceSource adapts an engine.Service to Source.
func ServiceSource(svc *engine.Service) Source {
	return serviceSource{svc: svc}
}

type serviceSource struct {
	svc *engine.Service
}

func (s serviceSource) FlowEvents(ctx context.Context, flowID string) ([]engine.Event, error) {
	return s.svc.Query().FlowEvents(ctx, flowID)
}

func (s serviceSource) Watch(ctx context.Context, after uint64) (<-chan []engine.Event, error) {
	return s.svc.Watch(ctx, after)
}

func (s serviceSource) LastSeq(ctx context.Context) (uint64, error) {
	return s.svc.Query().LastSeq(ctx)
}

func (s serviceSource) ListFlows(ctx context.Context, f engine.ListFilter) ([]state.FlowSummary, error) {
	return s.svc.Query().List(ctx, f)
}

func (s serviceSource) CountFlows(ctx context.Context, f engine.ListFilter) (int, error) {
	return s.svc.Query().Count(ctx, f)
}

func (s serviceSource) PendingReviews(ctx context.Context) ([]review.PendingReview, error) {
	return s.svc.Query().GateReviews(ctx)
}

func (s serviceSource) Get(ctx context.Context, flowID string) (*state.FlowState, error) {
	return s.svc.Query().Get(ctx, flowID)
}

func (s serviceSource) FlowWithSpec(ctx context.Context, flowID string) (*engine.FlowWithSpec, error) {
	return s.svc.Query().FlowWithSpec(ctx, flowID)
}

func (s serviceSource) GateResolve(ctx context.Context, flowID string, d review.Decision) (engine.Outcome, error) {
	return s.svc.GateResolve(ctx, flowID, d)
}

func (s serviceSource) Commit(ctx context.Context, flowID, label string) (engine.Outcome, error) {
	return s.svc.Commit(ctx, flowID, label, engine.ReportOptions{Channel: review.ChannelTUI})
}

func (s serviceSource) Revert(ctx context.Context, flowID, label string) (engine.Outcome, error) {
	return s.svc.Revert(ctx, flowID, label, engine.ReportOptions{Channel: review.ChannelTUI})
}

func (s serviceSource) Kill(ctx context.Context, flowID, by, reason string) (engine.Outcome, error) {
	return s.svc.Kill(ctx, flowID, engine.KillRequest{By: by, Reason: reason, Channel: review.ChannelTUI})
}
