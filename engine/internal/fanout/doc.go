// Package fanout holds the rules of a parallel_dispatch fan-out that do not
// touch the flow state: reading a task graph (ParseTasks), checking it
// (GraphViolations, ListViolations), naming a task's branch and worktree
// (Ref: distinct ids get distinct names), rendering a task's prompt from the
// step's intent_template (Prompt), the step's require (RequireSatisfied,
// RequireUnsatisfiable) and the original's float timestamps (UnixSeconds).
// The engine judges stratum_parallel_done with them; engine/run and
// engine/mcp run fan-outs with the same rules. A pipeline step compiles
// onto the same kind of task graph (ExpandPipeline: a chain of stage tasks
// per source item, lanes and a join for a fan-out region), its require
// counted over items (ItemVerdicts, PipelineRequireSatisfied). It imports
// nothing of stratum but specs (the pipeline's stages).
package fanout
