// Package clijson writes the JSON of the CLI's own commands, the original's
// "stratum-mcp query" forms: `stratum query flows` (Flows), `query flow ID`
// (Flow, FlowNotFound, FlowRefused; QueryFlow picks one), `query gates`
// (Gates) and `stratum gate` (GateAnswer, with a typed GateVerdict the CLI
// maps to its exit status). The engine's answers themselves are rendered by
// engine.Wire only; these objects read the engine's summaries, states and
// spec facts (engine.FlowWithSpec, engine.GateStep) and a gate's next status
// is the outcome's WireStatus.
//
// It also holds the rest of these two commands' work, so main.go only binds
// flags and maps answers to exit statuses: GateLine turns `stratum gate`'s
// flags into the review.Decision, ConfirmHuman applies the confirmation an
// approver: human gate needs from a shell (review.HumanConfirm) at the gate
// the flow waits at, and QueryHelp and GateHelp are their help texts.
//
// Part of the stratum command, not a public API: its exported names serve
// the command's packages and may change.
package clijson
