package run

// CommandHelp is the long help of `stratum run` (cobra's Long): what a run
// executes, where its flow is stored, its exit statuses and its output.
const CommandHelp = `Run executes a flow of SPEC itself, with the same state machine as the MCP tools:
compute functions and run: steps execute their command, infer steps call an LLM
provider, agent: steps run an agent CLI, flow: steps run their child flow, and gates
go to a review sink (a console prompt on a terminal, --approve / --on-gate otherwise).
The flow is stored in $STRATUM_HOME under a runner lease, so agents cannot report into
it while it runs, and a run that died or was interrupted continues with --resume ID.

Exit status: 0 complete; 1 failed (retries exhausted, executor error); 2 usage error
or invalid spec/inputs; 3 killed at a gate; 4 stopped at a gate nobody was allowed to
resolve (the flow id and the commands to decide and resume are printed); 5 budget
exhausted; 130 interrupted (state saved, resumable).

A completed run prints the flow's output as JSON on stdout (with --json: the whole report,
its run.output the same value); progress goes to stderr.`

// CommandExamples are the examples of `stratum run`'s help.
const CommandExamples = `  stratum run specs/examples/hello.stratum.yaml --approve all
  stratum run specs/examples/hello.stratum.yaml --input name=ann --approve review --json
  stratum run specs/examples/classify.stratum.yaml --replay specs/examples/classify.replay.json
  stratum run specs/examples/hello.stratum.yaml --on-gate exit --junit report.xml
  stratum run --resume 3f2a1c`

// PlanHelp is the long help of `stratum plan` (its arguments: PlanArgs).
const PlanHelp = `Plan validates SPEC, creates a flow execution in the store and prints the first
dispatch as JSON, exactly like the stratum_plan tool: an agent or a script then does the
step's work and reports it with "stratum step-done". --flow may be omitted when the spec
has one flow (or a workflow block naming its entry flow).`

// PlanExamples are the examples of `stratum plan`'s help.
const PlanExamples = `  stratum plan specs/examples/review.stratum.yaml --input task="add a --verbose flag"
  stratum plan specs/examples/hello.stratum.yaml --flow hello --input name=ann
  stratum plan specs/examples/hello.stratum.yaml --inputs inputs.json`

// StepDoneHelp is the long help of `stratum step-done` (its result:
// ParseResult).
const StepDoneHelp = `Step-done reports the JSON result of the current step. The engine checks it
(output_schema, guardrails, ensure) and prints the next dispatch, the same step again with
its violations, the completion, or an error envelope (exit 1).`

// StepDoneExamples are the examples of `stratum step-done`'s help.
const StepDoneExamples = `  stratum step-done 3f2a1c implement --result '{"summary":"add --verbose","files":["main.go"],"tests_pass":true}'
  stratum step-done 3f2a1c implement --result-file out.json
  echo '{"approved": true, "issues": []}' | stratum step-done 3f2a1c self_review --result-file -`
