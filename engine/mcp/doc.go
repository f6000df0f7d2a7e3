// Package mcp serves the stratum engine as a Model Context Protocol server
// over stdio (`stratum mcp`), so coding agents can plan flows, report step
// results and resolve gates through tool calls.
//
// Part of the stratum command, not a public API: its exported names serve
// the command's packages and may change.
//
// It exposes the original Python server's seventeen tools with the same
// parameter names, defaults and response shapes (upstream-behavior §2.2–§2.3),
// plus stratum_wait_gate and stratum_list_flows. Every tool result carries the
// engine's response both as structured content and as JSON text content.
//
// The server keeps no flow state in memory: every call goes through
// engine.Service to the shared store, so flows driven here are visible to
// `stratum query` and the TUI, and decisions made elsewhere (`stratum gate`)
// are seen by the next call. stratum_wait_gate waits on the store's change
// notification (engine.Service.Watch), not on a poll: it re-reads the flow
// when an event about it commits, here or in another process, and a timer
// at the gate's deadline applies it. Serve also applies expired gate
// deadlines in the background (engine.Service.EnforceDeadlines): it sleeps
// until the earliest pending deadline and learns of new gates from events,
// so it does not poll.
//
// Serve runs on a stdio connection of its own (transport.go) that reads
// stdin through a frame guard (frames.go): a frame the SDK's stdio
// connection would end the session on (over jsonlimit.MaxBytes, nested
// deeper than jsonlimit.MaxDepth, invalid JSON, not a JSON-RPC message, a
// batch) is answered with a JSON-RPC error instead, and the server goes on
// with the next line; so is a request whose id is null, an array, an object
// or a boolean (answered with id null). Each accepted frame is decoded once,
// into the message the session handles: the common request (keys jsonrpc,
// id, method and params only, plain strings) by one scan of its top level
// (frames_fast.go), any other by the SDK's jsonrpc.DecodeMessage, whose
// decoder allocates 32 KiB a run. The connection hands every call to
// the session under an id of its own and writes the answer with the
// client's id byte for byte (the SDK keeps ids as int64 or string); it lets
// at most maxInFlight calls in before their answers are written (a client
// that stops reading stops the server reading), and at the end of stdin it
// reports the end only once every call already read is answered. The
// plainest tools/call and ping frames after initialisation (no _meta, a
// registered tool other than stratum_wait_gate) are answered by the
// connection itself (lean.go), with the bytes the session would write,
// skipping the SDK session's per-call decoding, dispatch and re-encoding;
// initialize, notifications (cancellation included) and everything else
// go through the session.
//
// Background runs (bg.go: stratum_flow_run_bg, _bg_poll, _cancel_bg) drive
// a flow inside the server with a run.Runner holding the flow's lease
// ("bg-" ids); a stopping server leaves those leases to expire and every
// server adopts the runs whose holder is gone (adoptLoop), so a background
// run survives its server.
//
// Agent runs (agentrun.go: stratum_agent_run, stratum_cancel_agent_run)
// send a prompt to an agent CLI through run.RunAgentCall.
//
// Guarded transitions (guard.go) are the five stratum_guard_* tools over
// engine/guard, goals (goal.go) the four stratum_goal* tools over
// engine/goal, both on the server's store; unsupported.go lists the
// original's tools this stratum does not carry (not_supported).
//
// Install sets a project up for agents: the server in .mcp.json (and, on
// request, Codex's config.toml), the execution-model block between markers
// in CLAUDE.md (and AGENTS.md), the skills under .claude/skills (the
// texts are embedded from assets/), and on request (--hooks) three Claude
// Code hooks in .claude/settings.json that run `stratum hook NAME`
// (hooks.go: they keep the project memory file). Uninstall removes exactly
// that: an entry
// that is not ours, an edited skill and everything outside the markers stay.
// Both edit files as text (install_jsontext.go, install_toml.go,
// install_block.go, install_hooks.go) so the bytes they do not own are kept, and both refuse,
// writing nothing, a file they cannot parse. InstallReport.Write prints
// what they did, as text or JSON (`stratum install --json`);
// InstallCommand and UninstallCommand are the commands' bodies (the
// report printed, the exit status). The help
// texts of mcp, install, doctor, uninstall and hook are in command_help.go.
//
// Only this package imports the MCP SDK; the engine stays protocol-free.
package mcp
