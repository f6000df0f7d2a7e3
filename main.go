// Command stratum gives LLM calls and coding agents a formal execution model:
// typed specs, tracked flows, enforced postconditions, human gates and an
// auditable trace.
//
// main.go is the composition root: it builds the command tree, opens the store
// and wires concrete types together; the work lives in the packages. Errors
// become exit codes only here (see exitError).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/clijson"
	"github.com/stratum-go/stratum/engine/config"
	mcpserver "github.com/stratum-go/stratum/engine/mcp"
	runner "github.com/stratum-go/stratum/engine/run"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/specs"
	"github.com/stratum-go/stratum/specs/watch"
	"github.com/stratum-go/stratum/store/backend"
	"github.com/stratum-go/stratum/tui"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "0.1.0-dev"

// Exit codes shared by every command (`stratum run` adds its own,
// runner.Exit*).
const (
	exitOK      = 0
	exitFailure = 1 // the command ran and the answer is "no" (invalid spec, not found, …)
	exitUsage   = 2 // bad arguments or flags
)

// exitError carries an exit code to the edge; its message (if any) is printed
// to stderr by run.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageErr marks an error as a usage error (exit 2).
func usageErr(format string, a ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, a...)}
}

// failErr ends the command with exit 1 and err's message (a store or file
// failure, a refusal).
func failErr(err error) error { return &exitError{code: exitFailure, err: err} }

// silentExit ends the command with code without printing anything more.
func silentExit(code int) error { return &exitError{code: code} }

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes the command line and returns the process exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if path := os.Getenv("STRATUM_CPUPROFILE"); path != "" {
		// For performance reports: a pprof CPU profile of this process.
		if f, err := os.Create(path); err == nil && pprof.StartCPUProfile(f) == nil {
			defer func() { pprof.StopCPUProfile(); _ = f.Close() }()
		}
	}
	// Everything written to stdout and stderr has the secrets of the
	// environment and of the configuration here (API keys, tokens,
	// passwords) masked: a provider or agent may echo one. A config that
	// does not load is reported by the command that needs it.
	cfg, _ := projectConfig()
	red := runner.Redactor(cfg)
	stdout, stderr = red.Writer(stdout), red.Writer(stderr)
	diag = stderr
	root := newRootCommand(&app{stdin: stdin, stdout: stdout, stderr: stderr, github: os.Getenv("GITHUB_ACTIONS") == "true"})
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(stderr, "stratum:", ee.err)
		}
		return ee.code
	}
	// Cobra's own errors (unknown command, bad flag) are usage errors.
	fmt.Fprintln(stderr, "stratum:", err)
	return exitUsage
}

// app holds what the commands get from the process: its I/O streams,
// injected so tests can run commands in-process, and whether it runs under
// GitHub Actions (GITHUB_ACTIONS=true: annotations, github formats).
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	github         bool
	// terminal reports whether a stream is an interactive terminal (nil:
	// isTerminal); tests inject it to confirm an approver: human gate.
	terminal func(any) bool
}

// isTerm is a.terminal, or isTerminal.
func (a *app) isTerm(f any) bool {
	if a.terminal != nil {
		return a.terminal(f)
	}
	return isTerminal(f)
}

func newRootCommand(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "stratum",
		Short: "A formal execution model for LLM calls and coding agents",
		Long: `stratum runs typed specs (*.stratum.yaml): contracts, functions and flows of steps.
It tracks every flow execution, enforces ensure postconditions and output schemas,
retries with only the violations fed back, stops at human gates and records an
auditable trace. State lives in $STRATUM_HOME (default ~/.stratum).`,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErr("%v", err) })
	root.AddCommand(
		a.validateCommand(),
		a.workflowsCommand(),
		a.compileCommand(),
		a.planCommand(),
		a.stepDoneCommand(),
		a.resumeCommand(),
		a.queryCommand(),
		a.gateCommand(),
		a.auditCommand(),
		a.gcCommand(),
		a.mcpCommand(),
		a.installCommand(),
		a.uninstallCommand(),
		a.doctorCommand(),
		a.runCommand(),
		a.tuiCommand(),
		a.storeCommand(),
	)
	return root
}

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// ---- the store and the engine service ----

// openService opens the shared store ($STRATUM_HOME/stratum.db, or what
// STRATUM_STORE / store: select: store/backend) and returns the engine
// service over it. Every command that opens the store first
// applies the gate deadlines that have passed (persisted
// deadlines are enforced by whichever stratum process runs), so no command
// shows or decides a gate whose time is up.
func openService(ctx context.Context) (*engine.Service, *backend.Opened, error) {
	svc, st, err := openServiceNoSweep()
	if err != nil {
		return nil, nil, err
	}
	if _, err := svc.SweepTimeouts(ctx); err != nil {
		return nil, nil, failErr(err)
	}
	return svc, st, nil
}

// diag is where warnings go: run's (masked) stderr.
var diag io.Writer = os.Stderr

// openServiceNoSweep opens the store the settings select (openStore)
// without applying expired deadlines. A flow whose record cannot be decoded
// is skipped by sweeps and listings and reported once on stderr.
func openServiceNoSweep() (*engine.Service, *backend.Opened, error) {
	st, err := openStore(context.Background())
	if err != nil {
		return nil, nil, err
	}
	report := func(d *engine.DamagedError) { fmt.Fprintln(diag, "stratum: warning:", d) }
	return &engine.Service{Root: ".", Store: st, OnDamaged: report}, st, nil
}

// projectConfig is the configuration of the working directory
// ($STRATUM_HOME/config.yaml, then .stratum/config.yaml, then the
// environment), read once per process: the secrets to mask, the store
// settings and the console's keys all come from it. `stratum run` reads the
// spec's project instead (runner.ProjectDir).
var projectConfig = sync.OnceValues(func() (config.Config, error) { return config.Load(".") })

// storeSettings are the store settings: STRATUM_STORE and STRATUM_ETCD_*
// over store:/store_timeout:/etcd: of the config files (store/backend).
func storeSettings() (backend.Settings, error) {
	cfg, err := projectConfig()
	if err != nil {
		return backend.Settings{}, usageErr("%v", err)
	}
	s, err := backend.DefaultSettings(cfg)
	var se *backend.SettingsError
	if errors.As(err, &se) && se.Stage == backend.StageHome {
		return s, failErr(err)
	}
	if err != nil {
		return s, usageErr("%v", err)
	}
	return s, nil
}

// openStore opens the bbolt file ($STRATUM_HOME/stratum.db by default) or
// the etcd cluster the settings select.
func openStore(ctx context.Context) (*backend.Opened, error) {
	s, err := storeSettings()
	if err != nil {
		return nil, err
	}
	st, err := backend.Open(ctx, s)
	if err != nil {
		return nil, failErr(err)
	}
	return st, nil
}

// withService is a RunE that opens the service (openService) and hands it
// to fn.
func withService(fn func(ctx context.Context, svc *engine.Service, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		svc, _, err := openService(cmd.Context())
		if err != nil {
			return err
		}
		return fn(cmd.Context(), svc, args)
	}
}

// withStore is a RunE that opens the store the settings select (openStore),
// hands it to fn and closes it.
func withStore(fn func(ctx context.Context, st *backend.Opened) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		st, err := openStore(cmd.Context())
		if err != nil {
			return err
		}
		defer st.Close()
		return fn(cmd.Context(), st)
	}
}

// writeReport prints a store report as JSON (--json) or as text.
func (a *app) writeReport(jsonOut bool, r interface{ WriteText(io.Writer) error }) error {
	if jsonOut {
		return writeJSON(a.stdout, r)
	}
	return r.WriteText(a.stdout)
}

// withFlow opens the service (openService), resolves FLOW — the id or a
// unique prefix of it (Service.ResolveFlowID) — and hands both to fn; a
// FLOW that does not resolve is refused's to answer.
func withFlow(ctx context.Context, flow string, refused func(error) error, fn func(svc *engine.Service, id string) error) error {
	svc, _, err := openService(ctx)
	if err != nil {
		return err
	}
	id, err := svc.ResolveFlowID(ctx, flow)
	if err != nil {
		return refused(err)
	}
	return fn(svc, id)
}

// refused answers a FLOW that does not resolve as the engine's answer
// (answerExit).
func (a *app) refused(err error) error { return a.answerExit(nil, err) }

// answerExit prints an engine answer as the original's JSON (engine.Wire)
// and maps an error envelope to exit 1; any other error is a store failure.
func (a *app) answerExit(out engine.Outcome, err error) error {
	if err != nil && engine.AsError(err) == nil {
		return failErr(err)
	}
	if werr := writeJSON(a.stdout, engine.Wire(out, err)); werr != nil {
		return werr
	}
	if err != nil {
		return silentExit(exitFailure)
	}
	return nil
}

// ---- validate, workflows, compile ----

func (a *app) validateCommand() *cobra.Command {
	var (
		jsonOut bool
		format  string
		watchF  bool
		strict  bool
	)
	cmd := &cobra.Command{
		Use:   "validate FILE|DIR...",
		Short: "Check specs and report every problem with file:line:col",
		Long: `Validate decodes and checks each spec (directories are searched for *.stratum.yaml)
and prints every diagnostic as "file:line:col: severity code: message (suggestion)".

Warnings (routing-target-runs, unchecked-keyword, …) leave a spec valid;
--strict counts them as errors.

Exit status: 0 all valid, 1 some spec is invalid, 2 usage error.
Under GITHUB_ACTIONS=true the default format is github (workflow annotations).`,
		Example: `  stratum validate specs/examples
  stratum validate --json specs/examples/hello.stratum.yaml
  stratum validate --watch specs/examples`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErr("validate needs at least one FILE or DIR")
			}
			format, err := specs.ChooseFormat(format, cmd.Flags().Changed("format"), jsonOut, a.github)
			if err != nil {
				return usageErr("%v", err)
			}
			if watchF {
				return pathErr(watch.Report(cmd.Context(), args, format, a.stdout, a.stderr))
			}
			files, err := specs.CollectSpecFiles(args)
			if err != nil {
				return pathErr(err)
			}
			results, valid := specs.ValidateFiles(files, strict)
			if err := specs.WriteResults(a.stdout, format, results); err != nil {
				return err
			}
			if !valid {
				return silentExit(exitFailure)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print JSON (same as --format json)")
	cmd.Flags().StringVar(&format, "format", specs.FormatHuman, "output format: human, json or github")
	cmd.Flags().BoolVarP(&watchF, "watch", "w", false, "keep running and re-validate on every save")
	cmd.Flags().BoolVar(&strict, "strict", false, "count warnings as errors (exit 1)")
	return cmd
}

// pathErr maps a problem with the paths given (missing, no spec in them)
// to a usage error, anything else to exit 1 (nil stays nil).
func pathErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, specs.ErrNoSpecFiles):
		return usageErr("%v", err)
	}
	return failErr(err)
}

func (a *app) workflowsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "workflows [DIR]",
		Short: "List the registered workflows (specs with a workflow: block) in DIR",
		Long: `Workflows scans DIR (default ".", not recursive) for *.stratum.yaml files with a
workflow: block and prints {"workflows": [{name, description, input, path}], "errors": [...]},
the JSON of the original's stratum_list_workflows tool. Duplicate names are errors.`,
		Example: `  stratum workflows
  stratum workflows specs/examples | jq '.workflows[].name'`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			list, err := specs.DiscoverWorkflows(dir)
			if err != nil {
				return failErr(err)
			}
			return writeJSON(a.stdout, list)
		},
	}
}

func (a *app) compileCommand() *cobra.Command {
	var output, flowName string
	cmd := &cobra.Command{
		Use:   "compile TASKS_DIR",
		Short: "Compile spec-kit tasks/*.md into a .stratum.yaml flow",
		Long: `Compile turns a spec-kit tasks directory (one Markdown file per task, with
"## Acceptance Criteria" checklists) into a v0.1 spec: one compute function and one step
per task, file_exists/file_contains/tests/lint criteria as ensures, [P] tasks as parallel
groups in the dependency graph.`,
		Example: `  stratum compile testdata/speckit/sequential --flow build
  stratum compile tasks/ --output tasks.stratum.yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			c, err := specs.CompileTasks(args[0], flowName)
			var ce *specs.CompileError
			if errors.As(err, &ce) {
				return failErr(fmt.Errorf("%s: %s", ce.Type, ce.Message))
			}
			if err != nil {
				return failErr(err)
			}
			if output == "" || output == "-" {
				_, err := io.WriteString(a.stdout, c.YAML)
				return err
			}
			if err := os.WriteFile(output, []byte(c.YAML), 0o644); err != nil {
				return failErr(err)
			}
			fmt.Fprintf(a.stderr, "wrote %s (%d steps, flow %q)\n", output, len(c.Steps), c.FlowName)
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "write the spec to this file instead of stdout")
	cmd.Flags().StringVar(&flowName, "flow", "tasks", "name of the generated flow")
	return cmd
}

// ---- plan, step-done, resume, audit: drive a flow from a shell ----

// inputFlags adds --flow, --input and --inputs (plan, run).
func inputFlags(cmd *cobra.Command, flow *string, kv *[]string, file *string) {
	cmd.Flags().StringVar(flow, "flow", "", "flow to run (default: the only flow, or the workflow's entry flow)")
	cmd.Flags().StringArrayVar(kv, "input", nil, "flow input as NAME=VALUE (VALUE is parsed as JSON when it is valid JSON); repeatable")
	cmd.Flags().StringVar(file, "inputs", "", "JSON file with the flow inputs")
}

func (a *app) planCommand() *cobra.Command {
	var (
		flowName   string
		inputKV    []string
		inputsFile string
	)
	cmd := &cobra.Command{
		Use:   "plan SPEC",
		Short: "Start a flow (stratum_plan) and print its first dispatch",
		Long: `Plan validates SPEC, creates a flow execution in the store and prints the first
dispatch as JSON, exactly like the stratum_plan tool: an agent or a script then does the
step's work and reports it with "stratum step-done". --flow may be omitted when the spec
has one flow (or a workflow block naming its entry flow).`,
		Example: `  stratum plan specs/examples/review.stratum.yaml --input task="add a --verbose flag"
  stratum plan specs/examples/hello.stratum.yaml --flow hello --input name=ann
  stratum plan specs/examples/hello.stratum.yaml --inputs inputs.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, flow, inputs, err := runner.PlanArgs(args[0], flowName, inputKV, inputsFile)
			if err != nil {
				return usageErr("%v", err)
			}
			svc, _, err := openService(cmd.Context())
			if err != nil {
				return err
			}
			return a.answerExit(svc.Plan(cmd.Context(), string(src), flow, inputs, engine.PlanOptions{SpecFile: args[0]}))
		},
	}
	inputFlags(cmd, &flowName, &inputKV, &inputsFile)
	return cmd
}

func (a *app) stepDoneCommand() *cobra.Command {
	var result, resultFile string
	cmd := &cobra.Command{
		Use:   "step-done FLOW STEP",
		Short: "Report a step's result (stratum_step_done) and print what comes next",
		Long: `Step-done reports the JSON result of the current step. The engine checks it
(output_schema, guardrails, ensure) and prints the next dispatch, the same step again with
its violations, the completion, or an error envelope (exit 1).`,
		Example: `  stratum step-done 3f2a1c implement --result '{"summary":"add --verbose","files":["main.go"],"tests_pass":true}'
  stratum step-done 3f2a1c implement --result-file out.json
  echo '{"approved": true, "issues": []}' | stratum step-done 3f2a1c self_review --result-file -`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			v, err := runner.ParseResult(result, resultFile, a.stdin)
			if err != nil {
				return usageErr("%v", err)
			}
			return withFlow(cmd.Context(), args[0], a.refused, func(svc *engine.Service, id string) error {
				return a.answerExit(svc.StepDone(cmd.Context(), id, args[1], v, engine.ReportOptions{}))
			})
		},
	}
	cmd.Flags().StringVar(&result, "result", "", "the step result as JSON")
	cmd.Flags().StringVar(&resultFile, "result-file", "", "read the step result from a JSON file (- for stdin)")
	return cmd
}

func (a *app) resumeCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "resume FLOW",
		Short:   "Print the current dispatch of a flow (stratum_resume)",
		Example: `  stratum resume 3f2a1c`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withFlow(cmd.Context(), args[0], a.refused, func(svc *engine.Service, id string) error {
				return a.answerExit(svc.Resume(cmd.Context(), id))
			})
		},
	}
}

func (a *app) auditCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "audit FLOW",
		Short: "Print the audit snapshot of one flow execution",
		Long: `Audit prints the flow's trace, rounds, iterations and child audits as JSON (the
original's stratum_audit). Completed flows are kept in the store, so audits work after the
fact until "stratum gc" prunes them.`,
		Example: `  stratum audit 3f2a1c | jq '.trace'`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withFlow(cmd.Context(), args[0], a.refused, func(svc *engine.Service, id string) error {
				return a.answerExit(svc.Audit(cmd.Context(), id))
			})
		},
	}
}

// ---- query, gate, gc ----

func (a *app) queryCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "query",
		Short: "Print flows, one flow, or pending gates as JSON",
		Long: `Query reads the store and prints JSON in the original's "stratum-mcp query" shapes:
"query flows" and "query gates" print a list of objects, "query flow ID" one object; each
object has "_schema_version": "1" and the original's keys, plus ours. Flow statuses: running,
awaiting_gate, complete, killed, failed, budget_exhausted; a flow nothing drives any more (its
runner exited or died) keeps its status and adds "stalled": true. An unknown flow id exits 1 with
{"error": {"code": "NOT_FOUND", …}}.`,
	}
	var status string
	var limit int
	flows := &cobra.Command{
		Use:     "flows",
		Short:   "List every flow execution, newest first",
		Example: `  stratum query flows --status awaiting_gate | jq -r '.[].flow_id'`,
		Args:    cobra.NoArgs,
		PreRunE: func(*cobra.Command, []string) error {
			if status != "" {
				if _, err := state.ParseFlowStatus(status); err != nil {
					return usageErr("--status: %v", err)
				}
			}
			return nil
		},
		RunE: withService(func(ctx context.Context, svc *engine.Service, _ []string) error {
			list, err := svc.List(ctx, engine.ListFilter{Status: state.FlowStatus(status), Limit: limit})
			if err != nil {
				return failErr(err)
			}
			// Streamed entry by entry: the bytes writeJSON would write.
			return clijson.WriteFlows(a.stdout, list, time.Now())
		}),
	}
	flows.Flags().StringVar(&status, "status", "", "only flows with this status: running, awaiting_gate, complete, killed, budget_exhausted or failed")
	flows.Flags().IntVar(&limit, "limit", 0, "at most this many flows (0 = all)")
	flow := &cobra.Command{
		Use:     "flow ID",
		Short:   "Print the full persisted state of one flow",
		Example: `  stratum query flow 3f2a1c | jq '{status, current_step_id, step_outputs}'`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			refused := func(err error) error {
				if e := engine.AsError(err); e != nil {
					_ = writeJSON(a.stdout, clijson.FlowRefused(args[0], e))
					return silentExit(exitFailure)
				}
				return failErr(err)
			}
			return withFlow(cmd.Context(), args[0], refused, func(svc *engine.Service, id string) error {
				f, err := svc.FlowWithSpec(cmd.Context(), id)
				if errors.Is(err, engine.ErrNotFound) {
					_ = writeJSON(a.stdout, clijson.FlowNotFound(args[0]))
					return silentExit(exitFailure)
				} else if err != nil {
					return failErr(err)
				}
				return writeJSON(a.stdout, clijson.Flow(f, time.Now()))
			})
		},
	}
	gates := &cobra.Command{
		Use:     "gates",
		Short:   "List every gate waiting for a decision",
		Example: `  stratum query gates | jq -r '.[] | "\(.flow_id) \(.step_id)"'`,
		Args:    cobra.NoArgs,
		RunE: withService(func(ctx context.Context, svc *engine.Service, _ []string) error {
			pending, err := svc.PendingGateSteps(ctx)
			if err != nil {
				return failErr(err)
			}
			return writeJSON(a.stdout, clijson.Gates(pending))
		}),
	}
	cmd.AddCommand(flows, flow, gates)
	return cmd
}

func (a *app) gateCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "gate",
		Short: "Resolve a pending gate: approve, reject (kill) or revise",
		Long: `Gate records a decision on the gate a flow is waiting at, first-writer-wins across
every stratum process (TUI, MCP server, other shells). It prints
{"_schema_version": "1", "ok": true, "flow_id", "step_id", "outcome", "result"} where result
is the flow's next status (execute_step, await_gate, complete, killed, max_rounds_exceeded).

A gate with approver: human is decided here only on an interactive terminal, after you type
the gate's step id (or the flow's short id) to confirm; without a terminal (a script, an
agent's tool) it is refused with exit 2: decide it in the TUI or from a terminal.

A review opened by a Go program (stratum.AwaitHuman) is a gate whose STEP is its review id
(review-1, review-2, …; stratum query gates lists each with its question and options): approve
records a value, --option N (counted from 1) or --value JSON (checked against the review's
type); reject declines it (the program gets a ReviewRejectedError with the note); revise is
refused. A value that is not an option or does not fit is refused and the review stays open.

Exit status: 0 resolved; 1 unknown flow (error.code NOT_FOUND) or another error;
2 conflict (the gate was already resolved, or STEP is not the gate waiting), or an
approver: human gate without a terminal or without the confirmation.`,
	}
	for _, verb := range []struct {
		use     string
		outcome review.Outcome
		short   string
	}{
		{"approve", review.Approve, "Approve the gate (follow on_approve, or complete the flow)"},
		{"reject", review.Kill, "Kill the flow at the gate (follow on_kill, or end the flow killed)"},
		{"revise", review.Revise, "Send the flow back to the gate's on_revise step for another round"},
	} {
		var note, resolvedBy, reviewer, value string
		var round, option int
		c := &cobra.Command{
			Use:     verb.use + " FLOW STEP",
			Short:   verb.short,
			Example: fmt.Sprintf("  stratum gate %s 3f2a1c human --note \"looks good\"", verb.use),
			Args:    cobra.ExactArgs(2),
			RunE: func(cmd *cobra.Command, args []string) error {
				rb := review.ResolvedBy(resolvedBy)
				if !rb.Valid() {
					return usageErr("--resolved-by %q: want human, agent or system", resolvedBy)
				}
				if reviewer == "" {
					reviewer = review.CurrentUser()
				}
				d := review.Decision{FlowID: args[0], StepID: args[1], Outcome: verb.outcome, Rationale: note,
					Reviewer: reviewer, ResolvedBy: rb, Channel: review.ChannelCLI}
				if err := reviewValue(cmd, &d, option, value); err != nil {
					return err
				}
				if cmd.Flags().Changed("round") {
					d.Round = &round
				}
				// The engine refuses it too; asked here first so that
				// neither the store nor a human's confirmation is touched.
				if err := review.Check(d); err != nil {
					return usageErr("%v: say why with --note", err)
				}
				answer := func(next engine.Outcome, err error) error { return a.gateAnswer(d, args[1], next, err) }
				refused := func(err error) error { return answer(nil, err) }
				return withFlow(cmd.Context(), args[0], refused, func(svc *engine.Service, id string) error {
					d.FlowID = id
					if err := a.confirmHuman(cmd.Context(), svc, &d); err != nil {
						return err
					}
					return answer(svc.GateResolve(cmd.Context(), d.FlowID, d))
				})
			},
		}
		c.Flags().StringVar(&note, "note", "", "rationale recorded with the decision")
		c.Flags().StringVar(&resolvedBy, "resolved-by", "human", "who decided: human, agent or system")
		c.Flags().StringVar(&reviewer, "reviewer", "", "reviewer identity (default $USER)")
		c.Flags().IntVar(&round, "round", 0, "refuse the decision unless the gate is in this round")
		if verb.outcome == review.Approve {
			c.Flags().IntVar(&option, "option", 0, "a Go program's review: the option to pick, counted from 1")
			c.Flags().StringVar(&value, "value", "", "a Go program's review: the value to decide (JSON, checked against the review's type)")
			c.Example += "\n  stratum gate approve 3f2a1c review-1 --option 2 --note \"the safer plan\"\n  stratum gate approve 3f2a1c review-2 --value '{\"ship\": true}'"
		}
		cmd.AddCommand(c)
	}
	return cmd
}

// reviewValue puts `stratum gate approve --option N | --value JSON` into d:
// the value of a Go program's review (the engine checks it against the
// review's options and type).
func reviewValue(cmd *cobra.Command, d *review.Decision, option int, value string) error {
	opt, val := cmd.Flags().Changed("option"), cmd.Flags().Changed("value")
	switch {
	case opt && val:
		return usageErr("--option and --value: give one of them")
	case opt:
		if option < 1 {
			return usageErr("--option %d: options are counted from 1", option)
		}
		d.Option = option
	case val:
		if !json.Valid([]byte(value)) {
			return usageErr("--value %q is not JSON (a string is quoted: --value '\"yes\"')", value)
		}
		d.Value = json.RawMessage(value)
	}
	return nil
}

// gateAnswer prints the answer to a decision made with `stratum gate`
// (clijson.GateAnswer) and maps it to the exit status: 0 resolved, 2 a
// conflict, 1 anything else; an error without an envelope is a store
// failure.
func (a *app) gateAnswer(d review.Decision, stepArg string, next engine.Outcome, err error) error {
	if err != nil && engine.AsError(err) == nil {
		return failErr(err)
	}
	resp, verdict := clijson.GateAnswer(d.FlowID, stepArg, d.Outcome, next, err)
	werr := writeJSON(a.stdout, resp)
	switch verdict {
	case clijson.GateResolved:
		return werr
	case clijson.GateConflict:
		return silentExit(exitUsage)
	}
	return silentExit(exitFailure)
}

// confirmHuman applies review.HumanConfirm to a decision made with
// `stratum gate` at the gate its flow waits at (HumanConfirm.ConfirmAt): at
// an approver: human gate it needs an interactive terminal (stdin and
// stderr) and the gate's step id or the flow's short id typed, else exit 2.
func (a *app) confirmHuman(ctx context.Context, svc *engine.Service, d *review.Decision) error {
	st, err := svc.Get(ctx, d.FlowID)
	if errors.Is(err, engine.ErrNotFound) {
		return nil // the engine answers an unknown flow
	} else if err != nil {
		return failErr(err)
	}
	pg := st.Gate
	if r := st.Library.Review(d.StepID); r != nil {
		pg = &state.PendingGate{StepID: r.ID, Approver: r.Approver} // a Go program's review: each has its own approver
	}
	var g *review.WaitingGate
	if pg != nil {
		g = &review.WaitingGate{StepID: pg.StepID, Approver: review.Approver(pg.Approver), Round: pg.Round}
	}
	c := review.HumanConfirm{Terminal: a.isTerm(a.stdin) && a.isTerm(a.stderr), In: a.stdin, Out: a.stderr, Escape: specs.EscapeControl}
	if err := c.ConfirmAt(d, g); err != nil {
		return usageErr("%v", err)
	}
	return nil
}

func (a *app) gcCommand() *cobra.Command {
	var olderThan time.Duration
	var damaged bool
	cmd := &cobra.Command{
		Use:   "gc --older-than DURATION | --damaged",
		Short: "Delete finished flows (and their events) older than DURATION, or quarantine damaged ones",
		Long: `Gc prunes flows whose status is complete, killed, failed or budget_exhausted and that
have not changed for DURATION (e.g. 720h). Running flows and flows waiting at a gate are
never pruned, nor a finished child flow whose parent (or any ancestor) has not finished.
Prints {"deleted": N}.

--damaged (bbolt file only) moves every flow whose stored state or summary cannot be decoded
into the file's quarantine bucket (raw bytes kept) and removes its index entries and events.
Prints {"quarantined": [{"flow_id", "records", "reason"}]}.`,
		Example: "  stratum gc --older-than 720h\n  stratum gc --damaged",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if damaged {
				if cmd.Flags().Changed("older-than") {
					return usageErr("gc: give --older-than or --damaged, not both")
				}
				return withStore(a.quarantine)(cmd, nil)
			}
			if !cmd.Flags().Changed("older-than") {
				return usageErr("gc needs --older-than DURATION (for example 720h), or --damaged")
			}
			if olderThan < 0 {
				return usageErr("--older-than must not be negative")
			}
			svc, _, err := openServiceNoSweep()
			if err != nil {
				return err
			}
			n, err := svc.GC(cmd.Context(), olderThan)
			if err != nil {
				return failErr(err)
			}
			return writeJSON(a.stdout, map[string]any{"deleted": n})
		},
	}
	cmd.Flags().DurationVar(&olderThan, "older-than", 0, "minimum age of the flows to delete (e.g. 720h)")
	cmd.Flags().BoolVar(&damaged, "damaged", false, "quarantine flows whose stored record cannot be decoded")
	return cmd
}

// quarantine is `gc --damaged`.
func (a *app) quarantine(ctx context.Context, st *backend.Opened) error {
	q, err := backend.QuarantineDamaged(ctx, st)
	if errors.Is(err, backend.ErrNotBbolt) {
		return usageErr("gc --damaged: %v", err)
	} else if err != nil {
		return failErr(err)
	}
	return writeJSON(a.stdout, map[string]any{"quarantined": q})
}

// ---- mcp, install: the MCP server agents drive flows through ----

func (a *app) mcpCommand() *cobra.Command {
	var sweep time.Duration
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the stratum tools to an agent over MCP (stdio)",
		Long: `Mcp runs the Model Context Protocol server on stdin/stdout; an MCP client (Claude Code,
Codex, the MCP Inspector) starts it. It offers the original stratum tools (stratum_plan,
stratum_step_done, stratum_gate_resolve, stratum_audit, …) plus stratum_wait_gate and
stratum_list_flows, on the shared store: flows driven here show up in "stratum query" and the
TUI, and decisions made with "stratum gate" are seen at once. Logs go to stderr, starting with
the store it opened (path and schema version).
Register it for a project with "stratum install".`,
		Example: `  claude mcp add stratum -- stratum mcp
  npx @modelcontextprotocol/inspector --cli stratum mcp --method tools/list`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			svc, st, err := openService(cmd.Context())
			if err != nil {
				return err
			}
			schema, err := st.SchemaVersion(cmd.Context())
			if err != nil {
				return failErr(err)
			}
			if os.Getenv("GOGC") == "" {
				// A long-lived server with a small live heap: collecting at
				// 5x the live heap instead of 2x cuts the collector's share
				// of a tool call (about a fifth of its CPU at the default).
				debug.SetGCPercent(400)
			}
			opts := mcpserver.Options{Log: a.stderr, Version: version, SweepInterval: sweep,
				Store: fmt.Sprintf("%s (schema %d)", st.Name(), schema), Interactive: isTerminal(a.stdin)}
			if err := mcpserver.Serve(cmd.Context(), svc, opts); err != nil {
				return failErr(err)
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&sweep, "sweep-interval", mcpserver.DefaultSweepInterval, "gate deadlines are applied as they fall due; this is how soon a failed sweep is retried (negative: no background enforcement)")
	return cmd
}

func (a *app) installCommand() *cobra.Command {
	var opts mcpserver.InstallOptions
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "install",
		Short: "Set a project up for stratum: MCP server, CLAUDE.md block, skills",
		Long: `Install sets the project (the nearest directory with .git, else the current one) up for
agents: it registers the stratum MCP server in .mcp.json
({"mcpServers": {"stratum": {"command": "<this binary>", "args": ["mcp"]}}}), writes the
execution-model block between <!-- stratum:begin … --> and <!-- stratum:end --> into CLAUDE.md,
and adds the skills (slash commands) ` + strings.Join(mcpserver.Skills(), ", ") + ` under
.claude/skills. With --codex it also adds [mcp_servers.stratum] to $CODEX_HOME/config.toml
(default ~/.codex/config.toml) and the block to AGENTS.md. Files are edited as text: other
servers, keys and lines, and everything outside the markers keep their bytes; running it again
changes nothing; a skill that differs from ours is kept; a file that cannot be parsed is
reported and nothing is written. "stratum uninstall" removes it all again.

When STRATUM_HOME is set, the server entry gets "env": {"STRATUM_HOME": …} so the server uses
the same store. Run from a temporary "go run" build, install refuses (the path would vanish)
unless --command names what the client should run.`,
		Example: `  stratum install
  stratum install --codex --dry-run
  stratum install --command stratum   # rely on PATH instead of this binary's path`,
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			opts.StratumHome = os.Getenv("STRATUM_HOME")
			rep, err := mcpserver.Install(opts)
			return a.printInstallReport(rep, err, jsonOut)
		},
	}
	cmd.Flags().StringVar(&opts.Dir, "dir", "", "start the project-root search here (default: the current directory)")
	cmd.Flags().StringVar(&opts.Command, "command", "", "command the client runs (default: the absolute path of this binary)")
	cmd.Flags().BoolVar(&opts.Codex, "codex", false, "also register the server in Codex's config.toml ($CODEX_HOME, default ~/.codex) and write AGENTS.md's block")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "print what would be written and change nothing")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the report as JSON")
	return cmd
}

func (a *app) doctorCommand() *cobra.Command {
	var opts mcpserver.DoctorOptions
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check that an agent's stratum server runs this binary on this shell's store",
		Long: `Doctor reads the stratum server an agent's client starts — the project's .mcp.json and, when
it registers one, Codex's config.toml — and checks that its command is this binary and that its
STRATUM_HOME and STRATUM_STORE are this shell's: otherwise the agent's flows and gates live in
another store than the one your TUI shows. Each check prints one line, with the fix when it
fails.

Exit status: 0 every check passed, 1 some check failed, 2 usage error.`,
		Example: `  stratum doctor
  stratum doctor --json`,
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			rep, err := mcpserver.Doctor(opts)
			if err != nil {
				return failErr(err)
			}
			if err := rep.Write(a.stdout, jsonOut); err != nil {
				return err
			}
			if !rep.OK {
				return silentExit(exitFailure)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&opts.Dir, "dir", "", "start the project-root search here (default: the current directory)")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the checks as JSON")
	return cmd
}

func (a *app) uninstallCommand() *cobra.Command {
	var opts mcpserver.UninstallOptions
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "uninstall",
		Short: "Remove what \"stratum install\" added to this project",
		Long: `Uninstall removes what "stratum install" added, and nothing else: the stratum server entry
of .mcp.json (an entry that does not run "… mcp" is kept), the block between the stratum
markers in CLAUDE.md, and the skills whose SKILL.md is still what install wrote (an edited one
is kept and reported). With --codex also the [mcp_servers.stratum] table of Codex's config.toml
and AGENTS.md's block. A file left configuring nothing (.mcp.json without servers or other keys,
a CLAUDE.md that held only the block) is removed, and so are directories left empty. A file
that cannot be parsed is reported and nothing is changed.`,
		Example: `  stratum uninstall --dry-run
  stratum uninstall --keep-skills
  stratum uninstall --codex`,
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			rep, err := mcpserver.Uninstall(opts)
			return a.printInstallReport(rep, err, jsonOut)
		},
	}
	cmd.Flags().StringVar(&opts.Dir, "dir", "", "start the project-root search here (default: the current directory)")
	cmd.Flags().BoolVar(&opts.Codex, "codex", false, "also remove the Codex registration ($CODEX_HOME, default ~/.codex) and AGENTS.md's block")
	cmd.Flags().BoolVar(&opts.KeepSkills, "keep-skills", false, "leave the skills in .claude/skills")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "print what would be removed and change nothing")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the report as JSON")
	return cmd
}

// printInstallReport prints what install or uninstall did.
func (a *app) printInstallReport(rep mcpserver.InstallReport, err error, jsonOut bool) error {
	if err != nil {
		return failErr(err)
	}
	return rep.Write(a.stdout, jsonOut)
}

// ---- run: execute a flow in-process ----

func (a *app) runCommand() *cobra.Command {
	var (
		line               runner.CommandLine
		junitFile, recordF string
		replayFile         string
		jsonOut            bool
	)
	cmd := &cobra.Command{
		Use:   "run SPEC",
		Short: "Run a flow in-process: commands, LLM calls, agent CLIs, gates, budgets",
		Long: `Run executes a flow of SPEC itself, with the same state machine as the MCP tools:
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
its run.output the same value); progress goes to stderr.`,
		Example: `  stratum run specs/examples/hello.stratum.yaml --approve all
  stratum run specs/examples/hello.stratum.yaml --input name=ann --approve review --json
  stratum run specs/examples/classify.stratum.yaml --replay specs/examples/classify.replay.json
  stratum run specs/examples/hello.stratum.yaml --on-gate exit --junit report.xml
  stratum run --resume 3f2a1c`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			line.Args, line.Set = args, cmd.Flags().Changed
			open := func(ctx context.Context) (*engine.Service, error) { svc, _, err := openService(ctx); return svc, err }
			rep, code, err := line.Main(cmd.Context(), open, runner.Setup{Record: recordF, Replay: replayFile, Stdin: a.stdin,
				Stderr: a.stderr, Terminal: isTerminal(a.stdin) && isTerminal(a.stderr), GitHub: a.github}, junitFile, jsonOut)
			if rep != nil { // the --json report (also of a run that did not start), or the completed flow's output
				if werr := writeJSON(a.stdout, rep); werr != nil && err == nil {
					return werr
				}
			}
			if err != nil {
				return a.runErr(err)
			}
			if code != 0 {
				return silentExit(code)
			}
			return nil
		},
	}
	inputFlags(cmd, &line.Flow, &line.Inputs, &line.InputsFile)
	f := cmd.Flags()
	f.BoolVar(&jsonOut, "json", false, "print the final audit as JSON on stdout, with the run block: status, exit code, output, iterations, budget, calls")
	f.StringVar(&junitFile, "junit", "", "write a JUnit XML report (one test case per step) to this file")
	f.StringVar(&line.Resume, "resume", "", "continue the stored flow with this id (its runner died or was interrupted)")
	f.StringArrayVar(&line.Approve, "approve", nil, "approve this gate (step id) without asking; \"all\" approves every gate except approver: human ones; repeatable")
	f.StringVar(&line.OnGate, "on-gate", "", "at a gate --approve does not cover: exit (stop with exit 4), wait (for \"stratum gate\" from elsewhere), approve, kill, or prompt (default: prompt on a terminal, else exit)")
	f.StringVar(&recordF, "record", "", "record every LLM exchange of the run to this file")
	f.StringVar(&replayFile, "replay", "", "serve LLM responses from this recording (no network, no key)")
	f.BoolVar(&line.KeepWorktrees, "keep-worktrees", false, "leave each fan-out task's git worktree and branch in place (their paths are printed) instead of removing them")
	f.StringVar(&line.Cache, "cache", runner.CacheSession, "cache of steps with cache: true: none, session (this run) or global (persistent in the store)")
	return cmd
}

// runErr maps an error of starting a run to its exit: an invalid spec
// prints its diagnostics (exit 2), a usage problem exits 2, anything else
// (a store or executor failure) exits 1.
func (a *app) runErr(err error) error {
	var se *runner.SpecError
	var ue *runner.UsageError
	var ee *exitError
	switch {
	case errors.As(err, &se):
		format, _ := specs.ChooseFormat(specs.FormatHuman, false, false, a.github)
		_ = se.WriteDiagnostics(a.stderr, format)
		return silentExit(runner.ExitUsage)
	case errors.As(err, &ue):
		return usageErr("%v", ue.Err)
	case errors.As(err, &ee):
		return err
	}
	return failErr(err)
}

// isTerminal reports whether f is an interactive terminal: a file whose
// descriptor answers the terminal ioctl (isatty). A character device is not
// enough: /dev/null and /dev/zero are character devices, and a decision
// "typed" from them is a program's.
func isTerminal(f any) bool {
	if u, ok := f.(interface{ Unwrap() io.Writer }); ok {
		f = u.Unwrap()
	}
	file, ok := f.(*os.File)
	return ok && term.IsTerminal(file.Fd())
}

// ---- tui ----

func (a *app) tuiCommand() *cobra.Command {
	var plain, once, noColor bool
	var specDirs []string
	cmd := &cobra.Command{
		Use:   "tui [DIR...]",
		Short: "The operator console: flows, live trace, gates, checkpoints, iterations, specs",
		Long: `tui opens the operator console on the store ($STRATUM_HOME/stratum.db). It follows
every stratum process live: flows driven over MCP, by stratum run or from a shell update
as they move, and a gate decided elsewhere leaves the Gates pane.

Keys: tab/1-6 panes · ? help · / filter · : command · esc back · q quit.
Gates: a approve, r revise, x kill — each asks for a rationale and a second press
of the same key; enter alone never decides. Decisions are recorded with $USER and
channel tui. Keys are remappable in the keys: section of $STRATUM_HOME/config.yaml.

--plain streams the same state and events as plain text lines (logs, screen readers).`,
		Example: "  stratum tui\n  stratum tui specs/examples\n  stratum tui --plain",
		RunE: func(cmd *cobra.Command, args []string) error {
			// Directories may be given as arguments or with --watch.
			for _, d := range args {
				if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
					return usageErr("%s: not a directory", d)
				}
			}
			svc, opened, err := openService(cmd.Context())
			if err != nil {
				return err
			}
			cfg, cfgErr := projectConfig()
			err = tui.Command(cmd.Context(), tui.CommandOptions{Service: svc, Backend: opened.Name(), Plain: plain, Once: once,
				NoColor: noColor, SpecDirs: append(specDirs, args...), Config: cfg, ConfigErr: cfgErr,
				SweepInterval: mcpserver.DefaultSweepInterval, Terminal: isTerminal(a.stdout) && isTerminal(a.stdin), In: a.stdin, Out: a.stdout})
			var ue *tui.UsageError
			if errors.As(err, &ue) {
				return usageErr("%v", ue.Err)
			} else if err != nil {
				return failErr(err)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&plain, "plain", false, "stream state and events as plain lines instead of the full-screen console")
	cmd.Flags().BoolVar(&once, "once", false, "with --plain: print the current state and exit")
	cmd.Flags().BoolVar(&noColor, "no-color", false, "no colours (NO_COLOR is honoured too)")
	cmd.Flags().StringArrayVar(&specDirs, "watch", nil, "directory of *.stratum.yaml specs for the Specs pane (default .; repeatable); with --plain, stream their validation too")
	return cmd
}

// ---- store: inspection and migration between backends ----

func (a *app) storeCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "store",
		Short: "Inspect the store, or copy it to another (bbolt file ⇄ etcd)",
		Long: `The store holds every flow, the event log and the result cache: the bbolt file
$STRATUM_HOME/stratum.db, or an etcd cluster when STRATUM_STORE (or store: in config.yaml) is
etcd://HOST:PORT[,HOST:PORT…]/PREFIX. See README, "Team mode".`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(a.storeInfoCommand(), a.storeCopyCommand(), a.storeCheckCommand())
	return cmd
}

func (a *app) storeCheckCommand() *cobra.Command {
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check the bbolt file: pages (bbolt's check), then flows, summaries and indexes",
		Long: `Check reads the whole bbolt store file and reports damaged pages (bbolt's own consistency
check, which every process also runs before its first write to a file it has not verified) and,
if the pages are sound, records that cannot be decoded and indexes that disagree with the flows.
Exit status: 0 clean, 1 damaged (or unreadable), 2 usage (an etcd store).`,
		Example: "  stratum store check\n  stratum store check --json",
		Args:    cobra.NoArgs,
		RunE: withStore(func(ctx context.Context, st *backend.Opened) error {
			r, err := backend.Check(ctx, st)
			if errors.Is(err, backend.ErrNotBbolt) {
				return usageErr("store check: %v", err)
			} else if err != nil {
				return failErr(err)
			}
			if err := a.writeReport(jsonOut, r); err != nil || r.OK {
				return err
			}
			return silentExit(exitFailure)
		}),
	}
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print JSON")
	return cmd
}

func (a *app) storeInfoCommand() *cobra.Command {
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "info",
		Short: "Print the backend, its endpoints or path, schema version and counts",
		Long: `Info opens the store the settings select (STRATUM_STORE, store: in config.yaml, else
$STRATUM_HOME/stratum.db) and prints the backend, its path or endpoints and prefix, the schema
version, and how many flows (by status), pending gates, events and cache entries it holds.
Credentials are never printed.`,
		Example: "  stratum store info\n  STRATUM_STORE=etcd://127.0.0.1:2379/team stratum store info --json",
		Args:    cobra.NoArgs,
		RunE: withStore(func(ctx context.Context, st *backend.Opened) error {
			info, err := backend.Describe(ctx, st)
			if err != nil {
				return failErr(err)
			}
			return a.writeReport(jsonOut, info)
		}),
	}
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print JSON")
	return cmd
}

func (a *app) storeCopyCommand() *cobra.Command {
	var from, to string
	var force bool
	cmd := &cobra.Command{
		Use:   "copy --from SRC --to DST [--force]",
		Short: "Copy flows, events and the cache from one store to another",
		Long: `Copy copies every flow (with its summary, times and version), the event log (in order;
the destination numbers events afresh) and the result cache from SRC to DST. Each is a bbolt
file path or etcd://HOST:PORT[,HOST:PORT…]/PREFIX; TLS and credentials come from the same
settings as for every command (STRATUM_ETCD_*, etcd: in config.yaml). A destination that
holds flows or events is refused unless --force: then each flow of SRC is replaced in DST
(its events too), so copying again gives the same result. Stop the writers of SRC first:
flows changed during the copy may be copied as they were before.`,
		Example: `  stratum store copy --from ~/.stratum/stratum.db --to etcd://10.0.0.5:2379/team
  stratum store copy --from etcd://10.0.0.5:2379/team --to backup.db`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if from == "" || to == "" {
				return usageErr("store copy needs --from SRC and --to DST")
			}
			settings, err := storeSettings()
			if err != nil {
				return err
			}
			srcLoc, err := backend.Parse(from)
			if err != nil {
				return usageErr("--from: %v", err)
			}
			dstLoc, err := backend.Parse(to)
			if err != nil {
				return usageErr("--to: %v", err)
			}
			if srcLoc.String() == dstLoc.String() {
				return usageErr("--from and --to are the same store")
			}
			n, err := backend.CopyStores(cmd.Context(), srcLoc, dstLoc, settings, force)
			if err != nil {
				return failErr(err)
			}
			return writeJSON(a.stdout, n)
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "source store: a bbolt path or etcd://HOST:PORT[,…]/PREFIX")
	cmd.Flags().StringVar(&to, "to", "", "destination store, same forms")
	cmd.Flags().BoolVar(&force, "force", false, "replace the flows the destination shares with the source")
	return cmd
}
