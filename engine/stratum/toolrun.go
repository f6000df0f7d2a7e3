package stratum

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/internal/infer"
	"github.com/stratum-go/stratum/engine/internal/llm"
	"github.com/stratum-go/stratum/engine/state"
)

// toolLoop is the tool loop of a Call's attempts (nil without tools):
// every turn charged to the Call's envelope, every round's calls run
// concurrently and traced.
func (f *Fn[In, Out]) toolLoop(c *callState) *infer.ToolLoop {
	if f.tools == nil {
		return nil
	}
	return &infer.ToolLoop{
		Defs:      f.tools.defs,
		MaxRounds: f.tools.rounds,
		Run: func(ctx context.Context, r infer.ToolRound) ([]llm.ToolResult, error) {
			return f.runRound(ctx, c, r)
		},
		Charge: func(u state.Usage, cost *float64) engine.BudgetView {
			c.env.charge(cost, u.InputTokens+u.OutputTokens+u.CacheReadTokens+u.CacheWriteTokens+u.ReasoningTokens)
			return c.env.view()
		},
	}
}

// runRound runs one round's calls concurrently; each result carries its
// call's ID, in the calls' order.
func (f *Fn[In, Out]) runRound(ctx context.Context, c *callState, r infer.ToolRound) ([]llm.ToolResult, error) {
	results := make([]llm.ToolResult, len(r.Calls))
	traces := make([]ToolCallTrace, len(r.Calls))
	errs := make([]error, len(r.Calls))
	var wg sync.WaitGroup
	for i, call := range r.Calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], traces[i], errs[i] = f.runCall(ctx, c, call, r)
		}()
	}
	wg.Wait()
	c.mu.Lock()
	for i := range traces {
		traces[i].Attempt += c.rec.Attempts // the attempts of the call's earlier loops
	}
	c.rec.ToolCalls = append(c.rec.ToolCalls, traces...)
	c.mu.Unlock()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return results, nil
}

// runCall runs one call: the tool by name, its arguments checked against
// its schema, the approval when the tool requires one, then the function.
// What goes wrong with the call goes back to the model as the tool's
// error; only an approval that cannot be decided, or ctx ending, is an
// error of the Call.
func (f *Fn[In, Out]) runCall(ctx context.Context, c *callState, call llm.ToolCall, r infer.ToolRound) (llm.ToolResult, ToolCallTrace, error) {
	start := c.rt.opts.Now()
	tr := ToolCallTrace{Attempt: r.Attempt, Round: r.Round, ID: call.ID, Name: call.Name, Args: call.Args}
	done := func(res llm.ToolResult, err error) (llm.ToolResult, ToolCallTrace, error) {
		tr.Duration = c.rt.opts.Now().Sub(start)
		if res.IsError {
			var msg string
			_ = json.Unmarshal(res.Content, &msg)
			tr.Error = msg
		} else {
			tr.Result = res.Content
		}
		return res, tr, err
	}
	t := f.tools.byName[call.Name]
	if t == nil {
		return done(toolError(call, fmt.Sprintf("there is no tool named %q (tools: %s)", call.Name,
			strings.Join(slices.Sorted(maps.Keys(f.tools.byName)), ", "))), nil)
	}
	raw := call.Args
	if len(strings.TrimSpace(string(raw))) == 0 {
		raw = json.RawMessage("{}")
	}
	args, err := decodeExact(raw)
	if err != nil {
		return done(toolError(call, "the arguments are not JSON: "+err.Error()), nil)
	}
	if vs := t.args.Check(args); len(vs) > 0 {
		return done(toolError(call, "the arguments do not fit the tool's schema: "+strings.Join(vs, "; ")), nil)
	}
	if t.cfg.approval {
		id, rejected, err := f.approve(ctx, t, args, r)
		tr.ReviewID = id
		if err != nil {
			return done(toolError(call, "not run: "+err.Error()), err)
		}
		if rejected != nil {
			return done(toolError(call, fmt.Sprintf("the reviewer (%s) refused this call: %s", rejected.Reviewer, rejected.Rationale)), nil)
		}
	}
	out, err := runTool(ctx, t, args)
	if err != nil {
		if ctx.Err() != nil {
			return done(toolError(call, err.Error()), ctx.Err())
		}
		return done(toolError(call, err.Error()), nil)
	}
	return done(llm.ToolResult{ID: call.ID, Name: call.Name, Content: out}, nil)
}

// runTool runs the tool's function, a panic being its error.
func runTool(ctx context.Context, t *toolDef, args any) (out json.RawMessage, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the tool panicked: %v", r)
		}
	}()
	return t.run(ctx, args)
}

// approve opens the tool call's review and waits for it: approved (nil,
// nil), rejected (the rejection), or an error that ends the Call.
func (f *Fn[In, Out]) approve(ctx context.Context, t *toolDef, args any, r infer.ToolRound) (string, *ReviewRejectedError, error) {
	d, err := AwaitHuman(ctx, Review[string]{
		Question: t.cfg.question,
		Trigger:  "tool_call",
		Artifacts: map[string]any{"tool": t.name, "arguments": args, "function": f.name,
			"conversation": conversation(r.Prompt, r.History)},
		Options:  []string{"run " + t.name},
		Approver: t.cfg.approver,
	})
	var rej *ReviewRejectedError
	switch {
	case errors.As(err, &rej):
		return rej.ReviewID, rej, nil
	case err != nil:
		return "", nil, fmt.Errorf("%w: %s: the approval of tool %s: %w", ErrStratum, f.name, t.name, err)
	}
	return d.ReviewID, nil, nil
}

// conversation is the conversation so far as lines a reviewer reads: the
// prompt, then each turn's text, calls and results.
func conversation(prompt string, history []llm.Message) []string {
	lines := []string{"user: " + prompt}
	for _, m := range history {
		for _, p := range m.Parts {
			switch {
			case p.Text != "":
				lines = append(lines, m.Role+": "+p.Text)
			case p.ToolCall != nil:
				lines = append(lines, fmt.Sprintf("%s: calls %s %s", m.Role, p.ToolCall.Name, p.ToolCall.Args))
			case p.ToolResult != nil:
				kind := "result"
				if p.ToolResult.IsError {
					kind = "error"
				}
				lines = append(lines, fmt.Sprintf("tool %s %s: %s", p.ToolResult.Name, kind, p.ToolResult.Content))
			case p.Media != nil:
				lines = append(lines, m.Role+": ["+p.Media.MIMEType+"]")
			}
		}
	}
	return lines
}
