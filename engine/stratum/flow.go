package stratum

import (
	"context"
	"fmt"

	"github.com/stratum-go/stratum/engine/internal/otlp"
)

// Flow is a named body of code whose calls share a budget envelope, a
// session cache and a flow id. The body is plain Go: Calls,
// Compute functions, All/Race/Debate, AwaitHuman.
type Flow[In, Out any] struct {
	name   string
	budget Budget
	body   func(context.Context, In) (Out, error)
}

// NewFlow defines a flow. b is its envelope (the zero Budget: unbounded);
// a flow run inside another flow also draws from the enclosing one's.
func NewFlow[In, Out any](name string, b Budget, body func(context.Context, In) (Out, error)) *Flow[In, Out] {
	return &Flow[In, Out]{name: name, budget: b, body: body}
}

// Run runs the flow's body once: a new flow id (with a Store, the stored
// flow's id, shown by `stratum tui` and `stratum query flows`), a new
// envelope and session cache, and an OTLP root span "flow NAME" (a child
// of the enclosing span, if any). The body's error is returned as it is.
func (f *Flow[In, Out]) Run(ctx context.Context, in In) (Out, error) {
	var zero Out
	if f == nil || f.body == nil {
		return zero, fmt.Errorf("%w: a flow needs a body (NewFlow)", ErrStratum)
	}
	rt, err := runtimeFrom(ctx)
	if err != nil {
		return zero, fmt.Errorf("%w: flow %s: no runtime: %v", ErrStratum, f.name, err)
	}
	id, err := rt.recorder.startFlow(ctx, f.name, in)
	if err != nil {
		return zero, fmt.Errorf("%w: flow %s: %v", ErrStratum, f.name, err)
	}
	var parent *envelope
	if p := flowFrom(ctx); p != nil {
		parent = p.budget
	}
	fr := &flowRun{id: id, name: f.name, rt: rt, budget: newEnvelope(f.budget, parent, rt.opts.Now(), "flow "+f.name), session: newMemCache()}
	var span *otlp.Span
	if ps := otlp.SpanFromContext(ctx); ps != nil {
		span = ps.Child("flow "+f.name, otlp.KindInternal)
		span.Set(otlp.AttrFlowID, id)
		span.Set(otlp.AttrFlowName, f.name)
	} else {
		span = rt.exporter.StartFlow(id, f.name)
	}
	out, err := f.run(otlp.ContextWithSpan(withFlow(ctx, fr), span), in)
	span.End(err)
	var output any
	if err == nil {
		output = out
	}
	if ferr := rt.recorder.finishFlow(context.WithoutCancel(ctx), id, output, err); ferr != nil {
		rt.warnf("recording the end of flow %s (%s): %v", f.name, id, ferr)
	}
	return out, err
}

// run runs the body, turning a panic into an error.
func (f *Flow[In, Out]) run(ctx context.Context, in In) (out Out, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: flow %s panicked: %v", ErrStratum, f.name, r)
		}
	}()
	return f.body(ctx, in)
}

// FlowID returns the id of the innermost flow running ctx ("" outside a
// flow); with a Store it is the stored flow_id.
func FlowID(ctx context.Context) string {
	if f := flowFrom(ctx); f != nil {
		return f.id
	}
	return ""
}

// Compute wraps a plain function so that it is traced like an LLM
// function: one CallTrace per call (no model, no attempts) and a
// "compute NAME" span; it is interchangeable with (*Fn).Call, so a
// function can move between the two without its callers changing.
func Compute[In, Out any](name string, f func(context.Context, In) (Out, error)) func(context.Context, In) (Out, error) {
	return func(ctx context.Context, in In) (Out, error) {
		c, err := begin(ctx, name, Budget{})
		if err != nil {
			var zero Out
			return zero, err
		}
		c.rec.Inputs = plainJSON(in)
		var span *otlp.Span
		if ps := otlp.SpanFromContext(ctx); ps != nil {
			span = ps.Child("compute "+name, otlp.KindInternal)
		} else {
			span = c.rt.exporter.StartSpan("compute "+name, nil, otlp.KindInternal)
		}
		span.Set(otlp.AttrFunction, name)
		out, err := f(otlp.ContextWithSpan(ctx, span), in)
		span.End(err)
		if err != nil {
			c.finish(ctx, nil, err)
			return out, err
		}
		c.finish(ctx, out, nil)
		return out, nil
	}
}
