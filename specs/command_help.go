package specs

// The help of the commands whose work is this package's (cobra's Long and
// Example): `stratum validate` (CollectSpecFiles, ValidateFiles,
// WriteResults), `stratum workflows` (DiscoverWorkflows), `stratum
// compile` (CompileTasks) and `stratum migrate` (MigrateFile).

// ValidateHelp is the long help of `stratum validate`.
const ValidateHelp = `Validate decodes and checks each spec (directories are searched for *.stratum.yaml)
and prints every diagnostic as "file:line:col: severity code: message (suggestion)".

Warnings (routing-target-runs, unchecked-keyword, …) leave a spec valid;
--strict counts them as errors.

Exit status: 0 all valid, 1 some spec is invalid, 2 usage error.
Under GITHUB_ACTIONS=true the default format is github (workflow annotations).`

// ValidateExamples are the examples of `stratum validate`'s help.
const ValidateExamples = `  stratum validate specs/examples
  stratum validate --json specs/examples/hello.stratum.yaml
  stratum validate --watch specs/examples`

// WorkflowsHelp is the long help of `stratum workflows`.
const WorkflowsHelp = `Workflows scans DIR (default ".", not recursive) for *.stratum.yaml files with a
workflow: block and prints {"workflows": [{name, description, input, path}], "errors": [...]},
the JSON of the original's stratum_list_workflows tool. Duplicate names are errors.`

// WorkflowsExamples are the examples of `stratum workflows`'s help.
const WorkflowsExamples = `  stratum workflows
  stratum workflows specs/examples | jq '.workflows[].name'`

// CompileHelp is the long help of `stratum compile`.
const CompileHelp = `Compile turns a spec-kit tasks directory (one Markdown file per task, with
"## Acceptance Criteria" checklists) into a v0.1 spec: one compute function and one step
per task, file_exists/file_contains/tests/lint criteria as ensures, [P] tasks as parallel
groups in the dependency graph.`

// CompileExamples are the examples of `stratum compile`'s help.
const CompileExamples = `  stratum compile testdata/speckit/sequential --flow build
  stratum compile tasks/ --output tasks.stratum.yaml`

// MigrateHelp is the long help of `stratum migrate`.
const MigrateHelp = `migrate upgrades FILE to a newer IR version (default: the newest, "0.3") as the
original's "stratum-mcp migrate" does: the spec must validate before and after, the
change is shown as a unified diff, and the file is written (atomically) only once you
answer y. Only the version line changes (0.3 is a superset of 0.2); comments and
formatting stay as written. There is no migration from 0.1.

Exit status: 0 written, already at the target, or a dry run; 1 the spec does not
validate, or a file cannot be read or written; 2 you declined (or a usage error);
3 an unknown version, or no migration from the spec's version to the target.`

// MigrateExamples are the examples of `stratum migrate`'s help.
const MigrateExamples = `  stratum migrate specs/examples/review.stratum.yaml
  stratum migrate specs/examples/review.stratum.yaml --yes --backup
  stratum migrate specs/examples/review.stratum.yaml --dry-run
  stratum migrate specs/examples/review.stratum.yaml --json --yes`
