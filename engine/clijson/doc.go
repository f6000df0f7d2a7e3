// Package clijson writes the JSON of the CLI's own commands, the original's
// "stratum-mcp query" forms: `stratum query flows` (Flows), `query flow ID`
// (Flow, FlowNotFound, FlowRefused; QueryFlow picks one), `query gates`
// (Gates) and `stratum gate` (GateAnswer, with a typed GateVerdict the CLI
// maps to its exit status). The engine's answers themselves are rendered by
// engine.Wire only; these objects read the engine's summaries, states and
// spec facts (engine.FlowWithSpec, engine.GateStep) and a gate's next status
// is the outcome's WireStatus.
//
// It also holds the bodies of the commands that drive or inspect flows from
// a shell, so main.go only binds flags, opens the store and prints
// (command.go): each answers with (answer, exit status, error) — the object
// main prints as JSON, the exit status, the message for stderr. Answer is
// an engine answer (plan, step-done, resume, audit), Gate is `stratum gate`
// (GateLine turns its flags into the review.Decision, ConfirmHuman applies
// the confirmation an approver: human gate needs from a shell at the gate
// the flow waits at), KillFlow is `stratum kill` (KillLine its flags),
// QueryFlows, QueryFlow and QueryGates are `stratum query flows|flow|gates`, GC and
// GCStalled are `stratum gc` and `gc --stalled` (GCLine its flags; the
// store's --damaged is store/backend's). QueryHelp, GateHelp, KillHelp and AuditHelp are
// their help texts.
//
// Part of the stratum command, not a public API: its exported names serve
// the command's packages and may change.
package clijson
