package infer

import (
	"context"
	"fmt"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/internal/llm"
	"github.com/stratum-go/stratum/engine/internal/otlp"
	"github.com/stratum-go/stratum/engine/state"
)

// ToolLoop lets the model of an attempt answer with tool calls: the calls
// of a turn run (Run), their results go back in the next request, and the
// attempt's answer is the first turn without calls.
type ToolLoop struct {
	// Defs are the tools offered to the model.
	Defs []llm.ToolDef
	// MaxRounds bounds the tool rounds of one attempt: a model that still
	// calls tools after it is a *ToolLoopError.
	MaxRounds int
	// Run runs one round's calls (concurrently) and returns one result per
	// call, in order, each with its call's ID. An error ends the attempt
	// (a review nobody can decide, ctx ending); a tool's own failure is
	// its result, not an error.
	Run func(ctx context.Context, r ToolRound) ([]llm.ToolResult, error)
	// Charge is told each turn's usage and cost as it ends and returns
	// the budget left for the next turn.
	Charge func(usage state.Usage, cost *float64) engine.BudgetView
}

// ToolRound is one round of tool calls: the attempt and round (from 1),
// the calls, the prompt and the conversation after it so far.
type ToolRound struct {
	Attempt, Round int
	Calls          []llm.ToolCall
	Prompt         string
	History        []llm.Message
}

// ToolLoopError ends an attempt whose model went on calling tools after
// MaxRounds rounds.
type ToolLoopError struct {
	Rounds int
	// Calls are every call made, in order.
	Calls []llm.ToolCall
}

func (e *ToolLoopError) Error() string {
	return fmt.Sprintf("the model still called tools after %d rounds (%d calls)", e.Rounds, len(e.Calls))
}

// turnCall is one attempt's conversation with the provider.
type turnCall struct {
	e       *Executor
	ctx     context.Context
	target  llm.Target
	span    *otlp.Span
	hash    string
	timeout time.Duration
	label   string
	attempt int
	res     *AttemptResult
}

// converse sends lreq and, while the model answers with tool calls and a
// ToolLoop is set, runs them and sends their results, each turn within
// its own call deadline (the time a tool or a person takes is not the
// provider's) and after a budget check. It returns the final answer or
// the attempt's error.
func (t *turnCall) converse(lreq *llm.Request, budget engine.BudgetView, tools *ToolLoop) (*llm.Response, error) {
	var calls []llm.ToolCall
	for round := 0; ; round++ {
		resp, err := t.turn(lreq, budget)
		if tools == nil {
			return resp, err
		}
		if t.res.turns > 0 {
			t.res.Charged = true
			budget = tools.Charge(t.res.lastUsage, t.res.lastCost)
		}
		if err != nil || len(resp.ToolCalls) == 0 {
			return resp, err
		}
		calls = append(calls, resp.ToolCalls...)
		if round >= tools.MaxRounds {
			return nil, &ToolLoopError{Rounds: round, Calls: calls}
		}
		if err := budgetLeft(budget, time.Now(), t.label); err != nil {
			return nil, err
		}
		results, err := tools.Run(t.ctx, ToolRound{Attempt: t.attempt, Round: round + 1, Calls: resp.ToolCalls,
			Prompt: lreq.Prompt, History: append(lreq.Messages[:len(lreq.Messages):len(lreq.Messages)], assistantTurn(resp))})
		if err != nil {
			return nil, err
		}
		t.res.ToolRounds = round + 1
		lreq.Messages = append(lreq.Messages, assistantTurn(resp), toolTurn(results))
	}
}

// turn makes one request within the call deadline.
func (t *turnCall) turn(lreq *llm.Request, budget engine.BudgetView) (*llm.Response, error) {
	deadline, cause := time.Now().Add(t.timeout), error(&callTimeout{t.timeout})
	if !budget.Deadline.IsZero() && budget.Deadline.Before(deadline) {
		deadline, cause = budget.Deadline, engine.ErrBudgetExhausted
	}
	callCtx, cancel := context.WithDeadlineCause(llm.WithPromptHash(t.ctx, t.hash), deadline, cause)
	defer cancel()
	resp, callErr := t.target.Provider.Complete(callCtx, *lreq)
	t.res.lastUsage, t.res.lastCost = t.e.account(t.res, t.span, t.target, resp, callErr)
	if callErr != nil {
		return nil, t.e.mapCallError(t.ctx, callCtx, deadline, cause, t.label, t.target, callErr)
	}
	return resp, nil
}

func assistantTurn(resp *llm.Response) llm.Message {
	m := llm.Message{Role: llm.RoleAssistant}
	if resp.Content != "" {
		m.Parts = append(m.Parts, llm.Part{Text: resp.Content})
	}
	for i := range resp.ToolCalls {
		m.Parts = append(m.Parts, llm.Part{ToolCall: &resp.ToolCalls[i]})
	}
	return m
}

func toolTurn(results []llm.ToolResult) llm.Message {
	m := llm.Message{Role: llm.RoleTool}
	for i := range results {
		m.Parts = append(m.Parts, llm.Part{ToolResult: &results[i]})
	}
	return m
}
