package infer

import (
	"context"
	"errors"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/internal/otlp"
	"github.com/stratum-go/stratum/engine/state"
)

// LoopRequest is one call of the infer loop of seed 000 §3.1: up to
// Retries+1 attempts, each after a budget check, each answer parsed and
// checked, each retry's prompt carrying only the previous attempt's
// violations.
type LoopRequest struct {
	// AttemptRequest is the first attempt (its Parts.Violations are
	// replaced by the previous attempt's on each retry; Attempt is set).
	AttemptRequest
	// Retries is the number of retries after the first attempt.
	Retries int
	// Check validates a decoded answer: the schema, the decoding into the
	// caller's type, the postconditions. parse marks violations of the
	// first two kinds (a parse failure, seed 000 §3.1 step 5).
	Check func(value any) (violations []string, parse bool)
	// Budget, when set, returns the remaining envelope before each
	// attempt (else AttemptRequest.Budget is used for every attempt).
	Budget func() engine.BudgetView
	// Charge, when set, is told each attempt that made a request, as it
	// ends (usage and cost), before the next budget check.
	Charge func(AttemptResult)
	// Exporter starts the infer span as a root when ctx carries no span
	// (nil: no span then).
	Exporter *otlp.Exporter
	// OnDelta, when set, streams each attempt's answer: it is called with
	// the attempt (from 1) and each piece of its text as it arrives.
	OnDelta func(attempt int, text string) error
	// OnFailed, when set, is told each failed attempt's violations.
	OnFailed func(attempt int, violations []string)
}

// LoopResult is what a loop did. It is returned with the error too.
type LoopResult struct {
	// Value is the accepted answer (nil on failure).
	Value any
	// Attempts counts the requests made.
	Attempts int
	// Violations are each failed attempt's violations, in order.
	Violations [][]string
	// Usage and CostUSD are summed over every attempt; CostUSD is nil
	// when any attempt's cost was unknown.
	Usage   state.Usage
	CostUSD *float64
	// Model and PromptHash are the last attempt's.
	Model, PromptHash string
}

// ExhaustedError ends a loop whose attempts all failed.
type ExhaustedError struct {
	// Parse: the last failure was a parse failure (unparseable answer,
	// schema or decoding violation, refusal, truncation, transport).
	Parse bool
	// Violations are each attempt's violations, in order.
	Violations [][]string
}

// Error describes the ExhaustedError.
func (e *ExhaustedError) Error() string {
	return "every attempt failed"
}

// Loop runs the infer loop. It opens an "infer FUNCTION" span under ctx's
// span (each attempt's "chat MODEL" span is its child; each retry is a
// "retry" event on it). Errors: *ExhaustedError, an error wrapping
// engine.ErrBudgetExhausted (before an attempt, or the budget's deadline
// during one: never retried), a *ProviderError (never retried here: the
// transport retried it already), a *CompileError, an *engine.AttemptError
// of kind config, or ctx's error.
func (e *Executor) Loop(ctx context.Context, req LoopRequest) (LoopResult, error) {
	var span *otlp.Span
	if parent := otlp.SpanFromContext(ctx); parent != nil {
		span = parent.Child("infer "+req.Function, otlp.KindInternal)
	} else if req.Exporter != nil {
		span = req.Exporter.StartSpan("infer "+req.Function, nil, otlp.KindInternal)
	}
	if span == nil {
		return e.loop(ctx, span, req) // no exporter: no span to describe
	}
	span.Set(otlp.AttrFunction, req.Function)
	span.Set(otlp.AttrFlowID, req.FlowID)
	span.Set(otlp.AttrContractHash, req.Output.Hash)
	ctx = otlp.ContextWithSpan(ctx, span)
	res, err := e.loop(ctx, span, req)
	span.Set(otlp.AttrAttempts, res.Attempts)
	span.Set(otlp.AttrCostUSD, res.CostUSD)
	span.End(err)
	return res, err
}

func (e *Executor) loop(ctx context.Context, span *otlp.Span, req LoopRequest) (LoopResult, error) {
	var res LoopResult
	known := true
	var cost float64
	var previous []string
	parse := false
	for attempt := 1; attempt <= req.Retries+1; attempt++ {
		a := req.AttemptRequest
		a.Attempt, a.RetryEvent = attempt, false
		if req.OnDelta != nil {
			n := attempt
			a.OnDelta = func(text string) error { return req.OnDelta(n, text) }
		}
		a.Parts.Violations = previous
		if req.Budget != nil {
			a.Budget = req.Budget()
		}
		if len(previous) > 0 {
			span.Event("retry", map[string]any{otlp.AttrAttempt: attempt - 1, otlp.AttrViolations: previous})
		}
		out, err := e.Attempt(ctx, a)
		if out.Trace != nil {
			res.Attempts++
			res.Usage = addUsage(res.Usage, out.Usage)
			if out.CostUSD == nil {
				known = false
			} else {
				cost += *out.CostUSD
			}
			res.Model, res.PromptHash = out.Model, out.PromptHash
			if req.Charge != nil && !out.Charged {
				req.Charge(out)
			}
		}
		if known {
			c := cost
			res.CostUSD = &c
		} else {
			res.CostUSD = nil
		}
		if err == nil {
			previous, parse = req.Check(out.Value)
			if len(previous) == 0 {
				res.Value = out.Value
				return res, nil
			}
		} else if previous, err = retryable(err); err != nil {
			return res, err
		} else {
			parse = true
		}
		res.Violations = append(res.Violations, previous)
		if req.OnFailed != nil {
			req.OnFailed(attempt, previous)
		}
	}
	return res, &ExhaustedError{Parse: parse, Violations: res.Violations}
}

// retryable returns the violations of an attempt's error that another
// attempt may fix (a parse or contract failure), or the error itself when
// none may: a provider's failure (the transport already retried it), a
// tool loop, a configuration error, the budget, ctx's error.
func retryable(err error) ([]string, error) {
	var ae *engine.AttemptError
	var pe *ProviderError
	var tle *ToolLoopError
	switch {
	case errors.As(err, &pe), errors.As(err, &tle):
		return nil, err
	case errors.As(err, &ae) && ae.Kind != engine.AttemptConfig:
		return ae.Violations, nil
	}
	return nil, err
}

func addUsage(a, b state.Usage) state.Usage {
	return state.Usage{InputTokens: a.InputTokens + b.InputTokens, OutputTokens: a.OutputTokens + b.OutputTokens,
		CacheReadTokens: a.CacheReadTokens + b.CacheReadTokens, CacheWriteTokens: a.CacheWriteTokens + b.CacheWriteTokens,
		ReasoningTokens: a.ReasoningTokens + b.ReasoningTokens}
}
