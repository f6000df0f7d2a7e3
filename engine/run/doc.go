// Package run is the in-process runner behind `stratum run`: it drives a
// flow through the engine's state machine (the same engine.Service methods
// MCP uses) while holding a runner lease on it, executes each step with an
// executor (engine.Executor: a command for compute functions and `run:`
// steps, an agent CLI for `agent:` steps, an injected infer executor for LLM
// steps), runs child flows in-process, resolves gates through the review
// service (review.Service.Request over its handlers, in order: the
// --approve/--on-gate policy, the console prompt or the wait for a decision
// made elsewhere — a decision seen there is told with who made it, how and
// why),
// enforces run budgets (ms, usd, tokens; per call and per flow), records
// trace records and the budget ledger with the flow, caches results, and
// reports progress (terminal, plain lines, GitHub annotations, JUnit).
//
// Progress counts a step's attempts within the flow's round, as its retries
// and STRATUM_ATTEMPT do, and names the round after a revise (the runner's
// flowCtx.round and callState.attempt, set by beginCall); decisions are
// named by who made them (decisionText). A USD budget over an infer step
// whose model has no price is refused before a run starts (prices.go). The
// next steps a run prints name this stratum as it was invoked
// (Invoked.Invocation: stratum, the binary's path, or go run of the
// checkout; Options.Invocation). Needs (needs.go) is what a spec's flows
// call — agents, models — for stratum doctor.
//
// Part of the stratum command, not a public API: its exported names serve
// the command's packages and may change.
//
// It also owns `stratum run`'s command line and report (cli.go), so main
// only binds flags and maps outcomes to exit statuses: CommandLine.Check
// turns the flags into a Request (every problem a *UsageError), Execute
// builds the executors and the runner and starts or resumes the flow, and
// Conclude writes the JUnit file and builds the --json report;
// CommandLine.Main is the command's body (all three, the project's
// configuration and the opening of the service); ErrorStatus is the exit
// status of its error (an invalid spec's diagnostics printed, exit 2);
// Redactor masks what the commands write and Unmasked finds the file
// behind it (terminal checks, the full-screen console). The CLI's
// other parsers live here too (inputs.go): ParseInputs for --input/--inputs
// (also the TUI's run dialog), ParseResult for step-done's --result and
// --result-file, and PlanArgs (with PlanFlow, its default flow) for plan;
// the help texts of run, plan and step-done are in cli_help.go.
//
// Leases (lease.go): a Holder is the one way this process holds a lease —
// the runner on the flows it drives, the MCP server on a fan-out it runs
// (stratum_parallel_start) — its identity, its term and its keep-alive
// (a renewal every third of the TTL; a lost lease ends the run).
//
// A run that stops at a step it cannot execute in-process says which
// (Outcome.Handoff), so the MCP server's background runs can hand it to the
// agent; Options.LeasePrefix and KeepLeaseOnStop serve those runs too.
//
// RunAgentCall runs a prompt through an agent command outside a flow step
// (the MCP server's stratum_agent_run), with the same process handling.
//
// Background (background.go) runs a flow for a console (the TUI's Specs
// pane): its gates wait in the store and each one that opens is offered to
// the console's review.Sink.
//
// Fan-outs (parallel.go, fanout.go): decompose steps run like any step and
// their task graph is checked before dispatch; parallel_dispatch steps run
// their tasks through FanOut (concurrency, dependencies, git worktrees,
// require, merge), recording every task's state in the flow so a resume
// re-runs only unfinished tasks, and report the outcome through
// parallel_done. The records (and the tasks' call records) are written
// behind the work by one engine.FlowWriter per fan-out, so concurrent tasks
// never conflict with each other over the flow. The MCP server's stratum_parallel_start uses the same
// FanOut.
package run
