package run

import (
	"context"
	"io"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/config"
	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/specs"
)

// Background runs flows in-process for an interactive front end (the TUI's
// Specs pane), where no terminal prompt is possible: each gate the run
// meets waits for a decision recorded in the store (review.OnGateWait), made in
// the front end or in any other process, and is offered to a review.Sink as
// it opens so the front end can ask for that decision at once.
type Background struct {
	// Service is the engine the flows run on (required).
	Service *engine.Service
	// Config builds the executors of each run (NewExecutors).
	Config config.Config
	// Invocation runs this stratum in the next steps a run tells
	// (Options.Invocation).
	Invocation string
}

// RunFlow runs flow of sp with inputs and blocks until the run ends: it
// completes, fails, is killed, or stops (ctx ends, a step the in-process
// runner cannot execute). Every gate that opens is offered to sink (nil:
// none); a sink that refuses or is slow does not stop the run, because the
// gate waits in the store either way.
func (b Background) RunFlow(ctx context.Context, sp *specs.Spec, flow string, inputs map[string]any, sink review.Sink) (*Outcome, error) {
	x, err := NewExecutors(b.Config, "", "")
	if err != nil {
		return nil, err
	}
	defer x.Close(io.Discard)
	r := New(Options{Service: b.Service, Infer: x.Infer, Tracer: x.Tracer, Agent: x.Agent,
		Gates: review.Policy{OnGate: review.OnGateWait}, Progress: offerGates{ctx: ctx, sink: sink}, Invocation: b.Invocation})
	return r.Start(ctx, sp, flow, inputs)
}

// offerGates is the Progress of a background run: it offers each gate the
// run opens to the sink.
type offerGates struct {
	ctx  context.Context
	sink review.Sink
}

func (g offerGates) Event(e Event) {
	if e.Kind == EventGateOpen && e.Gate != nil && g.sink != nil {
		_ = g.sink.Emit(g.ctx, *e.Gate)
	}
}
