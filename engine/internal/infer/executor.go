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
	"github.com/stratum-go/stratum/engine/state"
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

	recorder *llm.Recorder // closed by Close
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
	// ExactNumbers decodes the answer's numbers as json.Number, their
	// digits as written (the library decodes them into Go types: an int64
	// above 2^53 keeps its value); the engine's expressions want float64.
	ExactNumbers bool
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
	step := req.Step
	if step == nil {
		return engine.StepOutcome{}, &engine.AttemptError{Kind: engine.AttemptConfig, Violations: []string{"infer executor: no step in the request"}}
	}
	var extra []string
	if f := req.Feedback(); f != nil {
		extra = append(extra, f.Prompt())
	}
	fn := step.Function
	if fn == "" {
		fn = step.ID
	}
	fnModel := ""
	if step.Fn != nil {
		fnModel = step.Fn.Model
	}
	res, err := e.Attempt(ctx, AttemptRequest{
		Function: fn, Models: []string{step.Model, fnModel},
		Parts:  PromptParts{Intent: req.Intent(), Context: extra, Inputs: Bindings(req.Spec, req.Flow, step, req.Inputs), Violations: req.Violations},
		Output: OutputOf(req.Spec, step), Inputs: req.Inputs, Budget: req.Budget,
		FlowID: req.FlowID, StepID: step.ID, Attempt: req.Attempt, RetryEvent: true,
	})
	var ce *CompileError
	if errors.As(err, &ce) {
		ce.Step = step.ID
		err = configErr(fmt.Sprintf("step '%s': %v", step.ID, err))
	}
	if res.Trace == nil {
		return engine.StepOutcome{}, err
	}
	return engine.StepOutcome{Output: res.Value, Usage: res.Usage, CostUSD: res.CostUSD, Trace: res.Trace}, err
}

// AttemptRequest is one LLM call without the engine's step types: what
// Execute (one attempt of a spec step) and Loop (the library's infer loop)
// both send.
type AttemptRequest struct {
	// Function names the call in the trace and the span.
	Function string
	// Models are the candidate model names, first non-empty wins, else the
	// router's default.
	Models []string
	// Parts are what the prompt is compiled from.
	Parts PromptParts
	// Output is the output schema and contract hash.
	Output Output
	// Inputs are the raw inputs for the trace record.
	Inputs map[string]any
	// Budget is the remaining envelope: checked before the call, and its
	// deadline bounds the call.
	Budget engine.BudgetView
	// Temperature overrides the executor's.
	Temperature *float64
	// MaxTokens, when positive, overrides the executor's output cap.
	MaxTokens int
	// Media are parts of the user turn (never in the prompt text).
	Media []llm.Media
	// Tools, when set, lets the model answer with tool calls (tools.go).
	Tools *ToolLoop
	// OnDelta, when set, streams each turn's answer text through it.
	OnDelta func(text string) error
	// FlowID, StepID and Attempt (1-based) label the trace and the span.
	FlowID, StepID string
	Attempt        int
	// RetryEvent puts a "retry" event with the previous violations on the
	// chat span (the runner's spans); Loop puts it on its infer span.
	RetryEvent bool
}

// AttemptResult is what one attempt produced. Usage, CostUSD and Trace are
// set whenever a request was made, even when the attempt failed.
type AttemptResult struct {
	Value   any
	Usage   state.Usage
	CostUSD *float64
	Trace   *state.TraceRecord
	// Model is the "provider/model" called.
	Model string
	// PromptHash is the compiled prompt's hash.
	PromptHash string
	// Charged: every turn was told to Tools.Charge as it ended (an
	// attempt with tool rounds); Usage and CostUSD are their sum.
	Charged bool
	// ToolRounds counts the tool rounds run.
	ToolRounds int

	turns     int       // requests made
	raw       llm.Usage // summed over the turns
	lastUsage state.Usage
	lastCost  *float64
}

// Attempt makes one call: it resolves the model, checks the budget
// (exhausted: an error wrapping engine.ErrBudgetExhausted, no request),
// compiles the prompt, calls the provider within CallTimeout and the
// budget's deadline, and extracts the JSON answer. Errors are
// *engine.AttemptError (parse, refusal, truncated, transport, timeout:
// the attempt is spent; config: stop), a *CompileError, an
// engine.ErrBudgetExhausted wrap, or ctx's error.
func (e *Executor) Attempt(ctx context.Context, req AttemptRequest) (AttemptResult, error) {
	now := time.Now
	if e.Now != nil {
		now = e.Now
	}
	start := now()
	if e.Models == nil {
		return AttemptResult{}, configErr("no LLM provider is configured")
	}
	target, err := e.Models.Resolve(e.Models.Choose(req.Models...))
	if err != nil {
		return AttemptResult{}, configErr(err.Error())
	}
	label := req.StepID
	if label == "" {
		label = req.Function
	}
	if err := budgetLeft(req.Budget, start, label); err != nil {
		return AttemptResult{}, err
	}
	prompt, err := req.Parts.Compile()
	if err != nil {
		return AttemptResult{}, err
	}
	schema, wrapped := llm.ObjectRoot(req.Output.Schema)
	lreq := e.request(target, req, prompt, schema)
	lreq.SchemaKey = schemaKey(req.Output, wrapped)
	violations := req.Parts.Violations
	if violations == nil {
		violations = []string{}
	}
	flowID := req.FlowID
	trace := &state.TraceRecord{
		Function: req.Function, Model: target.Full, Provider: target.Info.Name, Inputs: req.Inputs,
		OpaqueInputs: prompt.Opaque, CompiledPromptHash: prompt.Hash, ContractHash: req.Output.Hash,
		Attempts: req.Attempt, RetryReasons: violations, FlowID: &flowID, StepID: req.StepID, Attempt: req.Attempt,
	}
	span := chatSpan(ctx, target, lreq.MaxTokens, req, prompt.Hash)

	timeout := e.CallTimeout
	if timeout <= 0 {
		timeout = DefaultCallTimeout
	}
	res := AttemptResult{Trace: trace, Model: target.Full, PromptHash: prompt.Hash}
	finish := func(err error) (AttemptResult, error) {
		trace.DurationMS = now().Sub(start).Milliseconds()
		span.End(err)
		return res, err
	}
	tc := turnCall{e: e, ctx: ctx, target: target, span: span, hash: prompt.Hash, timeout: timeout, label: label, attempt: req.Attempt, res: &res}
	resp, err := tc.converse(&lreq, req.Budget, req.Tools)
	if err != nil {
		return finish(err)
	}
	value, repaired, err := decodeAnswer(resp.Content, wrapped, req.Output, target.Info.Dialect)
	if err != nil {
		return finish(err)
	}
	res.Value = value
	trace.Output = value
	trace.Repaired = repaired
	span.Set(otlp.AttrRepaired, repaired)
	return finish(nil)
}

// schemaKey names the schema a request sends (out's, wrapped in an
// object when wrapped): its contract hash, a hash of its content; "" when
// out has none.
func schemaKey(out Output, wrapped bool) string {
	switch {
	case out.Schema == nil || out.Hash == "" || out.Hash == "none":
		return ""
	case wrapped:
		return out.Hash + "/wrapped"
	}
	return out.Hash
}

// budgetLeft refuses a call whose envelope is spent (no attempt is used).
func budgetLeft(b engine.BudgetView, now time.Time, label string) error {
	switch {
	case !b.Deadline.IsZero() && !now.Before(b.Deadline):
		return fmt.Errorf("%w: no time left for step '%s' (ms budget)", engine.ErrBudgetExhausted, label)
	case b.USD != nil && *b.USD <= 0:
		return fmt.Errorf("%w: no usd left for step '%s'", engine.ErrBudgetExhausted, label)
	case b.Tokens < 0:
		return fmt.Errorf("%w: no tokens left for step '%s'", engine.ErrBudgetExhausted, label)
	}
	return nil
}

// request builds the provider request: output cap (doubled after a
// truncated answer, lowered to a token budget), system message,
// temperature, attachment.
func (e *Executor) request(target llm.Target, req AttemptRequest, prompt Prompt, schema map[string]any) llm.Request {
	maxTokens := e.MaxTokens
	if req.MaxTokens > 0 {
		maxTokens = req.MaxTokens
	}
	if previousTruncated(req.Parts.Violations) {
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
	system := e.System
	if system == "" {
		system = DefaultSystem
	}
	temp := e.Temperature
	if req.Temperature != nil {
		temp = req.Temperature
	}
	lreq := llm.Request{Model: target.Model, System: system, Prompt: prompt.Text, Schema: schema,
		SchemaName: "output", MaxTokens: maxTokens, Temperature: temp, Media: req.Media, OnDelta: req.OnDelta}
	if req.Tools != nil {
		lreq.Tools = req.Tools.Defs
	}
	if prompt.Attachment != nil {
		lreq.Attachment = prompt.Attachment
	}
	return lreq
}

// chatSpan opens the "chat MODEL" span of one attempt under ctx's span.
func chatSpan(ctx context.Context, target llm.Target, maxTokens int, req AttemptRequest, promptHash string) *otlp.Span {
	span := otlp.SpanFromContext(ctx).Child("chat "+target.Model, otlp.KindClient)
	if span == nil {
		return nil // no exporter: nothing to describe (and nothing to allocate)
	}
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
	span.Set(otlp.AttrFunction, req.Function)
	span.Set(otlp.AttrFlowID, req.FlowID)
	if req.StepID != "" {
		span.Set(otlp.AttrStepID, req.StepID)
	}
	span.Set(otlp.AttrAttempt, req.Attempt)
	span.Set(otlp.AttrContractHash, req.Output.Hash)
	span.Set(otlp.AttrPromptHash, promptHash)
	if req.RetryEvent && len(req.Parts.Violations) > 0 {
		span.Event("retry", map[string]any{otlp.AttrAttempt: req.Attempt - 1, otlp.AttrViolations: req.Parts.Violations})
	}
	return span
}

// account records a turn's usage and cost (refusals and truncations
// spent tokens too) on the result, summed over the attempt's turns, its
// trace record and the span, and returns the turn's own.
func (e *Executor) account(res *AttemptResult, span *otlp.Span, target llm.Target, resp *llm.Response, callErr error) (state.Usage, *float64) {
	var usage llm.Usage
	var reported *float64
	if resp != nil {
		usage = resp.Usage
		reported = resp.ProviderCostUSD
	}
	if resp != nil && span != nil {
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
	var cost *float64
	if resp != nil || re != nil || te != nil {
		cost = e.Models.Prices().Cost(target.Info, target.Model, usage, reported)
	}
	turn := engineUsage(usage)
	first := res.turns == 0
	res.turns++
	res.Usage = addUsage(res.Usage, turn)
	switch {
	case first:
		res.CostUSD = cost
	case res.CostUSD != nil && cost != nil:
		c := *res.CostUSD + *cost
		res.CostUSD = &c
	default:
		res.CostUSD = nil
	}
	res.raw = addLLMUsage(res.raw, usage)
	usage = res.raw
	eu := res.Usage
	res.Trace.Usage = &eu
	res.Trace.CostUSD = res.CostUSD
	usageAttrs(span, usage, res.CostUSD)
	return turn, cost
}

// usageAttrs sets the span's usage and cost attributes (nothing without a
// span: the values are not even boxed).
func usageAttrs(span *otlp.Span, usage llm.Usage, cost *float64) {
	if span == nil {
		return
	}
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
	span.Set(otlp.AttrCostUSD, cost)
}

func addLLMUsage(a, b llm.Usage) llm.Usage {
	return llm.Usage{Input: a.Input + b.Input, Output: a.Output + b.Output, CacheRead: a.CacheRead + b.CacheRead,
		CacheWrite: a.CacheWrite + b.CacheWrite, Reasoning: a.Reasoning + b.Reasoning}
}

// decodeAnswer extracts the JSON answer from the provider's text, unwraps
// a non-object root sent as {"value": …}, and drops the nulls a strict
// OpenAI schema forced onto optional fields.
func decodeAnswer(content string, wrapped bool, out Output, dialect string) (any, bool, error) {
	schema := out.Schema
	value, repaired, perr := extractJSON(content, out.ExactNumbers)
	if perr != nil {
		return nil, false, &engine.AttemptError{Kind: engine.AttemptParse, Violations: []string{"parse error: " + perr.Error()}}
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
		return v, repaired, nil
	}
	if schema != nil && dialect == llm.DialectOpenAI {
		value = llm.DropOptionalNulls(schema, value)
	}
	return value, repaired, nil
}

// ProviderError is an attempt the provider failed: it could not be
// reached (*llm.UnreachableError), its answer was too large
// (*llm.TooLargeError), it refused the request (*llm.APIError) or its
// transport retries ran out (*llm.TransportError). It is the attempt's
// *engine.AttemptError for the runner (kind config: the run stops, or
// transport: the attempt is spent) and carries the provider's error for
// the library (Loop stops at one: the transport already retried).
type ProviderError struct {
	Attempt *engine.AttemptError
	// Provider is the provider's name ("openai"), Model the "provider/model".
	Provider, Model string
	// Err is the llm error.
	Err error
}

// Error is the attempt's error.
func (e *ProviderError) Error() string { return e.Attempt.Error() }

// Unwrap returns the attempt's error and the provider's.
func (e *ProviderError) Unwrap() []error { return []error{e.Attempt, e.Err} }

// mapCallError turns a provider error into the executor's error classes.
// deadline is the deadline the call set itself and deadlineCause its cause:
// a *callTimeout, or engine.ErrBudgetExhausted for an ms budget; the
// caller's context (parent) may end sooner.
func (e *Executor) mapCallError(parent, callCtx context.Context, deadline time.Time, deadlineCause error, label string, target llm.Target, err error) error {
	var (
		re     *llm.RefusalError
		te     *llm.TruncatedError
		tr     *llm.TransportError
		api    *llm.APIError
		cfg    *llm.ConfigError
		miss   *llm.ReplayMissError
		down   *llm.UnreachableError
		large  *llm.TooLargeError
		media  *llm.UnsupportedMediaError
		model  *llm.ModelError
		stream *llm.StreamError
	)
	provider := func(kind string, msg string) error {
		return &ProviderError{Attempt: &engine.AttemptError{Kind: kind, Violations: []string{msg}},
			Provider: target.Info.Name, Model: target.Full, Err: err}
	}
	// The call's own deadline stopped it (not the caller's, sooner): it
	// passed, or the transport stopped its retries before it.
	stoppedByOwn := ownDeadline(callCtx, deadline) && (callCtx.Err() != nil || errors.As(err, &tr) && tr.Deadline)
	var ct *callTimeout
	switch {
	case parent.Err() != nil:
		return parent.Err()
	case errors.As(err, &miss):
		return configErr(miss.Error())
	case errors.As(err, &re):
		return &engine.AttemptError{Kind: engine.AttemptRefusal, Violations: []string{re.Error()}}
	case errors.As(err, &te):
		return &engine.AttemptError{Kind: engine.AttemptTruncated, Violations: []string{te.Error() + "; give a shorter answer"}}
	case errors.As(err, &down):
		return provider(engine.AttemptConfig, down.Error())
	case errors.As(err, &large):
		return provider(engine.AttemptConfig, fmt.Sprintf("the %s call: %v", target.Full, large))
	case stoppedByOwn && errors.As(deadlineCause, &ct):
		msg := fmt.Sprintf("the %s call %v (llm_timeout in config.yaml, or STRATUM_LLM_TIMEOUT)", target.Full, deadlineCause)
		if tr != nil {
			msg += "; " + tr.Error()
		}
		return &engine.AttemptError{Kind: engine.AttemptTimeout, Violations: []string{msg}}
	case stoppedByOwn:
		return fmt.Errorf("%w: step '%s' ran out of time during the %s call (ms budget)", engine.ErrBudgetExhausted, label, target.Full)
	case errors.As(err, &tr):
		return provider(engine.AttemptTransport, tr.Error())
	case errors.As(err, &api):
		return provider(engine.AttemptConfig, fmt.Sprintf("%s: %v", target.Full, api))
	case errors.As(err, &cfg):
		return configErr(cfg.Error())
	case errors.As(err, &media):
		return configErr(media.Error())
	case errors.As(err, &model), errors.As(err, &stream):
		return provider(engine.AttemptTransport, err.Error())
	}
	return &engine.AttemptError{Kind: engine.AttemptTransport, Violations: []string{fmt.Sprintf("%s: %v", target.Full, err)}}
}

// ownDeadline reports whether callCtx's deadline is the one the call set
// (deadline), not an earlier one of the caller's context.
func ownDeadline(callCtx context.Context, deadline time.Time) bool {
	dl, ok := callCtx.Deadline()
	return ok && !dl.Before(deadline)
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

func engineUsage(u llm.Usage) state.Usage {
	return state.Usage{InputTokens: u.Input, OutputTokens: u.Output, CacheReadTokens: u.CacheRead,
		CacheWriteTokens: u.CacheWrite, ReasoningTokens: u.Reasoning}
}
