// Package clijson writes the JSON of the CLI's own commands, the original's
// "stratum-mcp query" forms: `stratum query flows` (Flows), `query flow ID`
// (Flow, FlowNotFound, FlowRefused), `query gates` (Gates) and `stratum
// gate` (GateAnswer, with a typed GateVerdict the CLI maps to its exit
// status). The engine's answers themselves are rendered by engine.Wire
// only; these objects read the engine's summaries, states and spec facts
// (engine.FlowWithSpec, engine.GateStep) and a gate's next status is the
// outcome's WireStatus.
//
// Part of the stratum command, not a public API: its exported names serve
// the command's packages and may change.
package clijson
