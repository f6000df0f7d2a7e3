package infer

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/internal/llm"
	"github.com/stratum-go/stratum/engine/internal/otlp"
	"github.com/stratum-go/stratum/specs"
)

// DefaultCallTimeout is Executor.CallTimeout when unset: without it a
// provider that stalls its response body held an attempt for six tries of
// llm.Retry.TryTimeout (about 12 minutes).
const DefaultCallTimeout = 5 * time.Minute

// callTimeout is the cause of a call's context when CallTimeout ended it.
type callTimeout struct{ d time.Duration }

func (c *callTimeout) Error() string { return fmt.Sprintf("timed out after %s", c.d) }

// DefaultSystem is the system message of every call.
const DefaultSystem = "You are executing a typed function. Follow the instructions and return only the result, as JSON matching the requested output schema."

// Resolver resolves a "provider/model" name (an *llm.Router).
type Resolver interface {
	Choose(candidates ...string) string
	Resolve(model string) (llm.Target, error)
	Prices() *llm.PriceTable
}

// Executor runs infer steps: one Execute = one attempt = one LLM call.
type Executor struct {
	Models Resolver
	// System is the system message (default DefaultSystem).
	System string
	// MaxTokens caps the output (0 = provider default); a token budget
	// lowers it further, and the client caps what it sends at the model's
	// output limit (llm.RequestMaxTokens).
	MaxTokens int
	// Temperature, when set, is sent with every call.
	Temperature *float64
	// CallTimeout bounds the provider call of one attempt, transport
	// retries included (0 = DefaultCallTimeout); an ms budget that ends
	// sooner wins. A call that runs out of it fails the attempt with an
	// AttemptTimeout violation saying so.
	CallTimeout time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// New returns an Executor over a router.
func New(models Resolver) *Executor { return &Executor{Models: models} }

var _ engine.Executor = (*Executor)(nil)

// Output describes the output schema of an infer step.
type Output struct {
	// Schema is the JSON Schema the answer must satisfy (nil: any JSON
	// object).
	Schema map[string]any
	// Hash is the contract hash (seed 000 §1.4), "none" without a schema.
	Hash string
}

// OutputOf returns the step's output schema: its output contract's schema,
// else its output_schema.
func OutputOf(sp *specs.Spec, step *specs.Step) Output {
	if step.OutputContract != "" && sp != nil {
		if c := sp.Contracts[step.OutputContract]; c != nil && c.Schema != nil {
			return Output{Schema: c.Schema, Hash: c.Hash}
		}
	}
	if step.OutputSchema != nil {
		h := "none"
		if b, err := specs.CanonicalJSON(step.OutputSchema); err == nil {
			h = specs.Hash12(b)
		}
		return Output{Schema: step.OutputSchema, Hash: h}
	}
	return Output{Hash: "none"}
}

// Execute runs one attempt. Besides the errors documented on
// engine.Executor, the returned StepOutcome carries Usage, CostUSD and Trace
// even when the attempt failed after tokens were spent (parse failure,
// refusal, truncation), so the runner can charge them.
func (e *Executor) Execute(ctx context.Context, req engine.StepRequest) (engine.StepOutcome, error) {
	now := time.Now
	if e.Now != nil {
		now = e.Now
	}
	start := now()
	step := req.Step
	if step == nil {
		return engine.StepOutcome{}, &engine.AttemptError{Kind: engine.AttemptConfig, Violations: []string{"infer executor: no step in the request"}}
	}
	if e.Models == nil {
		return engine.StepOutcome{}, configErr("no LLM provider is configured")
	}
	fnModel := ""
	if step.Fn != nil {
		fnModel = step.Fn.Model
	}
	model := e.Models.Choose(step.Model, fnModel)
	target, err := e.Models.Resolve(model)
	if err != nil {
		return engine.StepOutcome{}, configErr(err.Error())
	}

	// Budget before the call: spends no attempt when exhausted.
	b := req.Budget
	if err := budgetLeft(b, start, step.ID); err != nil {
		return engine.StepOutcome{}, err
	}

	var extra []string
	if f := req.Feedback(); f != nil {
		extra = append(extra, f.Prompt())
	}
	prompt, err := Compile(req.Intent(), extra, Bindings(req.Spec, req.Flow, step, req.Inputs), req.Violations)
	if err != nil {
		var ce *CompileError
		if errors.As(err, &ce) {
			ce.Step = step.ID
		}
		return engine.StepOutcome{}, configErr(fmt.Sprintf("step '%s': %v", step.ID, err))
	}
	out := OutputOf(req.Spec, step)
	schema, wrapped := llm.ObjectRoot(out.Schema)

	maxTokens := e.maxTokens(req, target)
	system := e.System
	if system == "" {
		system = DefaultSystem
	}
	lreq := llm.Request{Model: target.Model, System: system, Prompt: prompt.Text, Schema: schema,
		SchemaName: "output", MaxTokens: maxTokens, Temperature: e.Temperature}
	if prompt.Attachment != nil {
		lreq.Attachment = prompt.Attachment
	}

	trace := traceRecord(req, target, &prompt, out.Hash)
	span := callSpan(ctx, target, maxTokens, trace.Function, req, out.Hash, prompt.Hash)
	deadline, cause := e.callDeadline(b)
	callCtx, cancel := context.WithDeadlineCause(llm.WithPromptHash(ctx, prompt.Hash), deadline, cause)
	defer cancel()
	resp, callErr := target.Provider.Complete(callCtx, lreq)

	var usage llm.Usage
	var reported *float64
	if resp != nil {
		usage = resp.Usage
		reported = resp.ProviderCostUSD
		span.Set(otlp.AttrResponseModel, resp.Model)
		span.Set(otlp.AttrResponseID, resp.ID)
		if resp.FinishReason != "" {
			span.Set(otlp.AttrFinishReasons, []string{resp.FinishReason})
		}
	}
	var re *llm.RefusalError
	var te *llm.TruncatedError
	switch {
	case errors.As(callErr, &re):
		usage = re.Usage
	case errors.As(callErr, &te):
		usage = te.Usage
	}
	outcome := engine.StepOutcome{Usage: engineUsage(usage), Trace: trace}
	if resp != nil || re != nil || te != nil {
		outcome.CostUSD = e.Models.Prices().Cost(target.Info, target.Model, usage, reported)
	}
	eu := outcome.Usage
	trace.Usage = &eu
	trace.CostUSD = outcome.CostUSD
	setUsage(span, usage, outcome.CostUSD)
	finish := func(err error) (engine.StepOutcome, error) {
		trace.DurationMS = now().Sub(start).Milliseconds()
		span.End(err)
		return outcome, err
	}

	if callErr != nil {
		return finish(e.mapCallError(ctx, callCtx, cause, step, target, callErr))
	}
	value, repaired, err := decodeAnswer(resp.Content, wrapped, out.Schema, target.Info.Dialect)
	if err != nil {
		return finish(err)
	}
	outcome.Output = value
	trace.Output = value
	trace.Repaired = repaired
	span.Set(otlp.AttrRepaired, repaired)
	return finish(nil)
}

// traceRecord is the trace record of the attempt, before the call: its
// function (the step id for an inline step), model, inputs, hashes and
// retry reasons.
func traceRecord(req engine.StepRequest, target llm.Target, prompt *Prompt, contractHash string) *engine.TraceRecord {
	step := req.Step
	fn := step.Function
	if fn == "" {
		fn = step.ID
	}
	flowID := req.FlowID
	violations := req.Violations
	if violations == nil {
		violations = []string{}
	}
	return &engine.TraceRecord{
		Function: fn, Model: target.Full, Provider: target.Info.Name, Inputs: req.Inputs,
		OpaqueInputs: prompt.Opaque, CompiledPromptHash: prompt.Hash, ContractHash: contractHash,
		Attempts: req.Attempt, RetryReasons: violations, FlowID: &flowID, StepID: step.ID, Attempt: req.Attempt,
	}
}

// callDeadline is when the call must end and why: the call timeout (a
// *callTimeout), or the ms budget's deadline when it comes first
// (engine.ErrBudgetExhausted).
func (e *Executor) callDeadline(b engine.BudgetView) (time.Time, error) {
	timeout := e.CallTimeout
	if timeout <= 0 {
		timeout = DefaultCallTimeout
	}
	deadline, cause := time.Now().Add(timeout), error(&callTimeout{timeout})
	if !b.Deadline.IsZero() && b.Deadline.Before(deadline) {
		deadline, cause = b.Deadline, engine.ErrBudgetExhausted
	}
	return deadline, cause
}

// budgetLeft refuses an attempt the budget b leaves nothing for at start
// (engine.ErrBudgetExhausted): no time, no usd or no tokens left.
func budgetLeft(b engine.BudgetView, start time.Time, stepID string) error {
	switch {
	case !b.Deadline.IsZero() && !start.Before(b.Deadline):
		return fmt.Errorf("%w: no time left for step '%s' (ms budget)", engine.ErrBudgetExhausted, stepID)
	case b.USD != nil && *b.USD <= 0:
		return fmt.Errorf("%w: no usd left for step '%s'", engine.ErrBudgetExhausted, stepID)
	case b.Tokens < 0:
		return fmt.Errorf("%w: no tokens left for step '%s'", engine.ErrBudgetExhausted, stepID)
	}
	return nil
}

// maxTokens is the output limit of the call: e.MaxTokens, twice what the
// previous attempt was given when its answer was truncated, and at most
// the tokens the budget leaves.
func (e *Executor) maxTokens(req engine.StepRequest, target llm.Target) int {
	maxTokens := e.MaxTokens
	if previousTruncated(req.Violations) {
		// The previous answer hit the output limit: allow twice as much.
		base := maxTokens
		if base == 0 && target.Info.Dialect == llm.DialectAnthropic {
			base = llm.MaxOutputTokens(target.Model) // what was sent
		}
		if base > 0 {
			maxTokens = 2 * base
		}
	}
	if b := req.Budget; b.Tokens > 0 && (maxTokens == 0 || int64(maxTokens) > b.Tokens) {
		maxTokens = int(min(b.Tokens, int64(1<<30)))
	}
	return maxTokens
}

// callSpan starts the GenAI client span of one call (a child of ctx's
// span) with the request's attributes, and a retry event when the attempt
// carries violations.
func callSpan(ctx context.Context, target llm.Target, maxTokens int, fn string, req engine.StepRequest, contractHash, promptHash string) *otlp.Span {
	step := req.Step
	span := otlp.SpanFromContext(ctx).Child("chat "+target.Model, otlp.KindClient)
	span.Set(otlp.AttrOperationName, "chat")
	span.Set(otlp.AttrProviderName, target.Info.Name)
	span.Set(otlp.AttrRequestModel, target.Model)
	span.Set(otlp.AttrOutputType, "json")
	if u, err := url.Parse(target.Info.BaseURL); err == nil && u.Hostname() != "" {
		span.Set(otlp.AttrServerAddress, u.Hostname())
		port := u.Port()
		if port == "" && u.Scheme == "https" {
			port = "443"
		} else if port == "" && u.Scheme == "http" {
			port = "80"
		}
		if n, err := strconv.Atoi(port); err == nil {
			span.Set(otlp.AttrServerPort, n)
		}
	}
	if sent := llm.RequestMaxTokens(target.Model, maxTokens, target.Info.Dialect == llm.DialectAnthropic); sent > 0 {
		span.Set(otlp.AttrRequestMaxTokens, sent)
	}
	span.Set(otlp.AttrFunction, fn)
	span.Set(otlp.AttrFlowID, req.FlowID)
	span.Set(otlp.AttrStepID, step.ID)
	span.Set(otlp.AttrAttempt, req.Attempt)
	span.Set(otlp.AttrContractHash, contractHash)
	span.Set(otlp.AttrPromptHash, promptHash)
	if len(req.Violations) > 0 {
		span.Event("retry", map[string]any{otlp.AttrAttempt: req.Attempt - 1, otlp.AttrViolations: req.Violations})
	}
	return span
}

// setUsage records the call's token usage and cost on its span.
func setUsage(span *otlp.Span, usage llm.Usage, costUSD *float64) {
	span.Set(otlp.AttrInputTokens, usage.InputInclusive())
	span.Set(otlp.AttrOutputTokens, usage.OutputInclusive())
	if usage.CacheRead > 0 {
		span.Set(otlp.AttrCacheReadTokens, usage.CacheRead)
	}
	if usage.CacheWrite > 0 {
		span.Set(otlp.AttrCacheWriteTokens, usage.CacheWrite)
	}
	if usage.Reasoning > 0 {
		span.Set(otlp.AttrReasoningTokens, usage.Reasoning)
	}
	span.Set(otlp.AttrCostUSD, costUSD)
}

// decodeAnswer reads the answer's JSON value (repaired says it had to be
// repaired): the "value" field of a wrapped non-object schema, and an
// OpenAI answer without the nulls strict mode forced into optional fields.
// A bad answer is an AttemptParse error.
func decodeAnswer(content string, wrapped bool, schema map[string]any, dialect string) (value any, repaired bool, err error) {
	value, repaired, err = ExtractJSON(content)
	if err != nil {
		return nil, false, &engine.AttemptError{Kind: engine.AttemptParse, Violations: []string{"parse error: " + err.Error()}}
	}
	if wrapped {
		m, ok := value.(map[string]any)
		if !ok {
			return nil, false, &engine.AttemptError{Kind: engine.AttemptParse, Violations: []string{"parse error: expected an object with a \"value\" field"}}
		}
		v, ok := m["value"]
		if !ok {
			return nil, false, &engine.AttemptError{Kind: engine.AttemptParse, Violations: []string{"parse error: the answer has no \"value\" field"}}
		}
		value = v
	} else if schema != nil && dialect == llm.DialectOpenAI {
		value = llm.DropOptionalNulls(schema, value)
	}
	return value, repaired, nil
}

// mapCallError turns a provider error into the executor's error classes.
// deadlineCause is the cause of callCtx's deadline: a *callTimeout, or
// engine.ErrBudgetExhausted for an ms budget.
func (e *Executor) mapCallError(parent, callCtx context.Context, deadlineCause error, step *specs.Step, target llm.Target, err error) error {
	var (
		re   *llm.RefusalError
		te   *llm.TruncatedError
		tr   *llm.TransportError
		api  *llm.APIError
		cfg  *llm.ConfigError
		miss *llm.ReplayMissError
	)
	switch {
	case parent.Err() != nil:
		return parent.Err()
	case errors.As(err, &miss):
		return configErr(miss.Error())
	case errors.As(err, &re):
		return &engine.AttemptError{Kind: engine.AttemptRefusal, Violations: []string{re.Error()}}
	case errors.As(err, &te):
		return &engine.AttemptError{Kind: engine.AttemptTruncated, Violations: []string{te.Error() + "; give a shorter answer"}}
	case timedOut(callCtx, deadlineCause, err):
		msg := fmt.Sprintf("the %s call %v (llm_timeout in config.yaml, or STRATUM_LLM_TIMEOUT)", target.Full, deadlineCause)
		if errors.As(err, &tr) {
			msg += "; " + tr.Error()
		}
		return &engine.AttemptError{Kind: engine.AttemptTimeout, Violations: []string{msg}}
	case errors.Is(err, context.DeadlineExceeded) || callCtx.Err() != nil:
		return fmt.Errorf("%w: step '%s' ran out of time during the %s call (ms budget)", engine.ErrBudgetExhausted, step.ID, target.Full)
	case errors.As(err, &tr):
		return &engine.AttemptError{Kind: engine.AttemptTransport, Violations: []string{tr.Error()}}
	case errors.As(err, &api):
		return configErr(fmt.Sprintf("%s: %v", target.Full, api))
	case errors.As(err, &cfg):
		return configErr(cfg.Error())
	}
	return &engine.AttemptError{Kind: engine.AttemptTransport, Violations: []string{fmt.Sprintf("%s: %v", target.Full, err)}}
}

// timedOut reports whether the call ended because of CallTimeout (cause is
// its deadline's cause): its context's deadline passed, or its transport
// retries stopped because the next one would have passed it.
func timedOut(callCtx context.Context, cause, err error) bool {
	var ct *callTimeout
	if !errors.As(cause, &ct) {
		return false
	}
	var tr *llm.TransportError
	return callCtx.Err() != nil || (errors.As(err, &tr) && tr.Deadline)
}

// truncatedPrefix starts the violation of a truncated answer (see
// llm.TruncatedError), so the next attempt can raise its output limit.
const truncatedPrefix = "the answer was truncated at the output token limit"

func previousTruncated(violations []string) bool {
	for _, v := range violations {
		if strings.HasPrefix(v, truncatedPrefix) {
			return true
		}
	}
	return false
}

func configErr(msg string) error {
	return &engine.AttemptError{Kind: engine.AttemptConfig, Violations: []string{msg}}
}

func engineUsage(u llm.Usage) engine.Usage {
	return engine.Usage{InputTokens: u.Input, OutputTokens: u.Output, CacheReadTokens: u.CacheRead,
		CacheWriteTokens: u.CacheWrite, ReasoningTokens: u.Reasoning}
}
