// Package judge is the tiered judge of judge steps (the original's
// STRAT-JUDGE kernel): given a step's predicates and the evidence a worker
// claims (artifacts as text, the files it modified), it stages that evidence
// in a per-turn tree and decides each predicate.
//
// The tree is the original's (artifacts/NAME.txt, modified/PATH,
// manifest.json), written as one uncompressed archive, turn-N/turn.zip:
// creating one file per piece of evidence was what a turn cost (10,000
// files took seconds on a loaded 2-vCPU machine; see BenchmarkTier1).
// Tier 1 reads the archive as an fs.FS; a verifier gets it extracted.
//
//   - Tier 1 decides deterministic predicates: their statements are
//     expressions of kind specs.ExprPredicate, run with the staged tree as
//     the root of file_exists and file_contains (specs.EvalEnv.FS).
//   - Tier 2 asks a Verifier (an LLM or an agent CLI without write tools,
//     working in a read-only copy of the staged turn) for a verdict with
//     evidence. Its answer is checked against the verdict contract (the
//     shared contract checker) and every citation must name a staged file;
//     a "met" without evidence counts as ambiguous.
//   - Tier 3 (stakes paranoid) gives every tier-2 "met" to an adversary
//     that has not seen tier 2's reasoning, in a fresh read-only copy; the
//     copy is compared with the staged tree afterwards, so an adversary
//     that writes cannot change the evidence and its verdict is discarded.
//
// The answer is the original's JudgeResult (Result), field for field, so
// existing ensure expressions (result.met, result.clean) and review
// consumers read it unchanged.
//
// The package runs no process and opens no network connection itself: the
// Verifier does (engine/run's AgentVerifier, or a provider). It imports
// specs and the engine's contract checker; engine/mcp (stratum_judge) and
// engine/run (judge steps in-process) use it.
package judge
