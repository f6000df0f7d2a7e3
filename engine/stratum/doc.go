// Package stratum is the Stratum runtime as a Go library: typed LLM
// functions with contracts, flows with budgets, concurrency primitives,
// and humans in the loop. Flows it runs can be recorded in the same store
// as `stratum run` and the MCP server, so `stratum tui` shows them and a
// person can answer their reviews there.
//
// # Runtime
//
// A Runtime (New) holds what calls share: the model router, reading the
// environment and the config files exactly as `stratum run` does
// (STRATUM_MODEL, <PROVIDER>_API_KEY, <PROVIDER>_BASE_URL over
// $STRATUM_HOME/config.yaml and ./.stratum/config.yaml; Options.Model wins
// over STRATUM_MODEL), the record or replay transport (Options.Record,
// Options.Replay: the same file format as `stratum run --record/--replay`),
// the OTLP exporter (OTEL_EXPORTER_OTLP_ENDPOINT), the global cache and the
// trace. WithRuntime attaches it to a context; without one, calls use a
// default Runtime built from the environment on first use. Close flushes
// the spans and the record file.
//
// # Models
//
// A Model answers one request (Generate). The built-in providers are
// Models: NewProvider builds one from values alone (OpenAI-compatible
// servers, Anthropic, Gemini over its REST API, Ollama, …), and
// Options.Models routes model names to any Model — a provider of the
// program's own, a test double. Record and replay, pricing, budgets and
// traces apply to every Model alike; a Model's error fails the attempt as
// a *ProviderError, never as a parse failure.
//
// # Tools, streaming, media
//
// Spec.Tools (NewTool) lets the model call typed Go functions before it
// answers: the calls of one turn run concurrently, each call's arguments
// are checked against the tool's schema (a misfit goes back to the model
// as the tool's error), every turn is charged and every call traced
// (CallTrace.ToolCalls), more than MaxToolRounds rounds is a
// *ToolLoopError, and RequireApproval makes each call a review first
// (approver "human": only a person decides). Fn.Stream yields each
// attempt's deltas over server-sent events, a Retry element per failed
// attempt and a Final element with the checked value. An input field of
// type Media or []Media is sent as an image, audio or document part,
// never in the prompt text; a provider that cannot take it is refused
// before any request. Spec.MaxTokens caps the answer; Spec.Examples are
// few-shot pairs placed after the context.
//
// # Typed LLM functions
//
// NewInfer[In, Out](name, Spec) defines a function once (its output
// schema, from SchemaFor[Out], and its contract hash are computed then;
// an invalid definition is a *CompileError) and Fn.Call calls it from any
// goroutine. In binds to the prompt by its JSON field names, in
// declaration order, one "name: value" line each after the intent (a
// string of several lines is set apart in an indented, fenced block, so
// no input can pass for the prompt's own lines such as the retry block
// below); fields tagged `stratum:"opaque"` are sent as attached JSON
// data, never in the instruction text. Inputs are never substituted into
// the intent: a {placeholder} there is a *CompileError. Numbers keep every
// digit both ways (an int64 above 2^53 in an input or an answer). A Call:
//
//  1. runs the Given preconditions: a failure is a *PreconditionError and
//     no request is made;
//  2. looks in the cache (Spec.Cache: CacheSession is one Flow.Run,
//     CacheGlobal the Store's, or memory with a warning without one); a
//     hit re-runs the schema and the ensures and records 0 attempts;
//  3. makes up to Retries+1 attempts (Retries counts retries after the
//     first attempt, default 3, NoRetries for none), each after a budget
//     check. An answer that does not parse, fit the schema or decode into
//     Out is a parse failure; then every Ensure runs, in order. The next
//     attempt's prompt carries only the previous attempt's violations
//     (the block below);
//  4. ends in *ParseError (the last failure was a parse failure) or
//     *PostconditionError, each with every attempt's violations; or in a
//     *ProviderError when the provider failed (unreachable, an HTTP 4xx,
//     an answer over 32 MiB, its transport retries spent): the transport
//     retried what it could — an unreachable provider a few times within
//     about two seconds — and the Call makes no further attempt.
//
// The retry block:
//
//	Previous attempt failed:
//	  - <violation>
//	Fix these issues specifically.
//
// Spec.Quorum runs Quorum loops concurrently on one envelope, each with
// its own retries; failed ones are dropped; answers agree when their
// AgreeOn fields (a JSON field name of Out, checked at definition whenever
// it is set) are equal as canonical JSON; fewer than Threshold
// agreeing is a *ConsensusError with the outputs; the winner is the
// agreeing answer with the highest "confidence" field, else the first.
// Spec.Refine wraps the loop: after an answer Until rejects, the
// next prompt ends with "Previous output had the following issues:
// <feedback>" and "Fix these and regenerate." (only the latest feedback,
// after any retry block); running out of MaxIterations (default 5) is a
// *ConvergenceError. Probable returns a Probabilistic (one sample, or
// Options.SampleN in test mode); Spec.Stable makes Call sample in test
// mode and require StableThreshold agreement (*StabilityError).
//
// The infer loop is the one `stratum run` uses (the same prompt compiler
// and the same attempt), so a prompt, a retry block and a recording mean
// the same in both.
//
// Retries differs from the YAML spec's retries: a Spec's Retries counts
// retries after the first attempt (as Python Stratum's @infer does), while `retries:` in
// a *.stratum.yaml counts total attempts (Python Stratum's MCP server's).
// Retries: 2 in Go is retries: 3 in YAML.
//
// # Budgets
//
// A Budget bounds time, USD and tokens (a zero field is unbounded). A
// Call's envelope is its Spec.Budget intersected with the remainder of
// every enclosing Flow's; every attempt, sample and iteration is charged
// to all of them. The deadline bounds each request: reached during one,
// the Call fails with a *BudgetError, never a retry. Cost and tokens are
// checked before each request, so the request that crosses a limit
// returns its answer and the next attempt or Call fails with a
// *BudgetError before anything is sent; it names the axis, the envelope
// ("the call" or "flow NAME"), its limit and what was spent. Time spent
// waiting for a person (AwaitHuman) is not charged to a flow's time
// budget. A model missing from the price table has an unknown cost, which
// charges nothing: a Call or Probable whose envelope bounds USD on such a
// model is refused before any request (an error matching ErrStratum that
// says how to add the price through STRATUM_MODEL_PRICING_JSON), since
// that budget could never be enforced.
//
// # Flows and composition
//
// NewFlow defines a flow; Flow.Run gives its body a flow id (FlowID), an
// envelope, a session cache and a "flow NAME" span. Compute wraps plain
// Go so it is traced like an LLM function and interchangeable with
// (*Fn).Call. All keeps input order and cancels the rest on the first
// error (a *BranchError naming the branch); Any and Race return the first
// success, AtLeast the first n; Settle collects every outcome; AllValid
// adds a validate function over all the values (ErrParallelValidation). Each of
// them cancels the branches it no longer needs and waits for every one
// to return before it does: no goroutine outlives the call. Debate runs
// its agents concurrently per round; from round 2 each gets the others'
// previous arguments in agent order; Converged says whether the final
// arguments agree on AgreeOn; Synthesize gets the transcript.
//
// # Trace
//
// Every Call (failed ones, cache hits and Compute calls too) produces one
// CallTrace: inputs, output, attempts, each failed attempt's
// violations, tokens and cost summed over attempts, duration, contract and
// prompt hashes, flow id. Runtime.Trace returns the last 10,000 of
// them; Options.OnCall receives each as it ends; with a Store, each Call
// made inside a Flow.Run is a trace entry of that flow (a Call outside any
// flow is kept by the Runtime only, never persisted): its inputs (cut to
// 16 KiB of JSON, and marked so), each failed attempt with its
// violations, its tool calls (arguments and results cut to 4 KiB),
// whether it streamed and why it failed — shown in the Trace pane of
// `stratum tui` and under calls in `stratum audit` and stratum_audit.
// With OTLP configured, spans nest flow NAME →
// infer NAME → chat MODEL, with a "retry" event on the infer span per
// retry.
//
// # Errors
//
// Every error of the library matches errors.Is(err, ErrStratum): the
// typed errors (CompileError, PreconditionError, PostconditionError,
// ParseError, ProviderError, BudgetError, ConvergenceError,
// ConsensusError, StabilityError, ReviewTimeoutError,
// ReviewRejectedError, BranchError whatever its branch returned),
// ErrParallelValidation, and configuration errors (no model, no key, a
// replay miss). Bad input is an error, never a panic; a panicking branch,
// check or flow body is reported as an error.
//
// # Humans
//
// AwaitHuman opens a review (a question, a trigger, artifacts, Options or
// any value of T's schema, a wall-clock Timeout with OnTimeout, an
// Approver) and waits for its decision. With a Store the review is
// persisted first — a gate of the current flow (review-1, review-2, …;
// several may be open at once), or of a flow of its own outside Flow.Run
// — then the Sinks are told, and it is decided anywhere: `stratum tui`
// (the Gates pane: an option's number or a typed value, a rationale, the
// confirming key), `stratum gate approve FLOW STEP --option N | --value
// JSON` or `reject`, stratum_gate_resolve with value, or Runtime.Resolve.
// The wait follows the service's events (this process's broker and the
// store's Watch) and a deadline timer, never polling. Without a Store the
// review lives in the program: the Sinks are told and Runtime.Resolve
// decides; with no Sinks the console sink asks on the terminal (an
// option's number or a JSON value, or reject; a rationale) — only when
// stdin and stderr are a terminal: otherwise (/dev/null, a pipe, a
// service) AwaitHuman fails at once, "nobody can decide this review
// here". The value rule is the engine's: a value that is not an option or
// does not fit T is refused and the review stays open; the first decision
// wins; a rejection is a *ReviewRejectedError with the rationale, a
// timeout without OnTimeout a *ReviewTimeoutError (with it, the value with
// Reviewer and Channel "auto"); ctx ending withdraws the review.
//
// Who may decide. A review anyone may decide (Approver "" or "any") is
// decided by any of the above. A review with Approver "human" — and a
// spec's approver: human gate — is decided only by a person:
//
//	the TUI (stratum tui)                 decides
//	stratum gate approve|reject           only on a terminal, after typing the review's id or the flow's short id
//	the console sink                      the same: a terminal and the typed confirmation
//	MCP (stratum_gate_resolve, an agent)  refused: gate_requires_human
//	Runtime.Resolve (a sink, a web form)  refused: gate_requires_human, nothing recorded
//	a deadline (OnTimeout)                refused when the review opens (only a person approves it)
//
// A program cannot show that a person decided (an agent can write and run
// one), so a program's decision never stands for a person's. With a Store
// every Flow.Run is a stored flow (driver library), each Call one commit
// made by the flow's one writer (concurrent Calls never conflict), and
// the program's lease (30 s, renewed every 10 s) marks its flows stalled
// once it died; they are never resumed.
//
// The package never imports the store, tui, bbolt or etcd packages: a
// program that wants its flows in `stratum tui` opens the shared store
// with OpenDefault of package github.com/stratum-go/stratum/store/shared
// and passes it as Options.Store (a Store). That links the bbolt store and
// no etcd client; team mode (an etcd:// store) is one more import:
//
//	import _ "github.com/stratum-go/stratum/store/team"
//
// Nor does a program link the *.stratum.yaml parser or its expression
// language (expr-lang): the flows of a spec are the stratum command's, and
// Resolve refuses the gate of one.
//
// Runnable programs for the classic Stratum examples (sentiment, migrate,
// parallel, refine, debate, human review) and for tools with approval,
// streaming and images are under examples/; each runs from an embedded
// recording, or against a real provider with --live.
package stratum
