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
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/clijson"
	"github.com/stratum-go/stratum/engine/config"
	"github.com/stratum-go/stratum/engine/doctor"
	"github.com/stratum-go/stratum/engine/guard"
	mcpserver "github.com/stratum-go/stratum/engine/mcp"
	runner "github.com/stratum-go/stratum/engine/run"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/specs"
	"github.com/stratum-go/stratum/specs/exprlang"
	"github.com/stratum-go/stratum/specs/watch"
	"github.com/stratum-go/stratum/store/backend"
	"github.com/stratum-go/stratum/store/etcdstore"
	"github.com/stratum-go/stratum/store/shared"
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
// failure, a refusal); nil stays nil.
func failErr(err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: exitFailure, err: err}
}

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
		a.migrateCommand(),
		a.planCommand(),
		a.stepDoneCommand(),
		a.resumeCommand(),
		a.queryCommand(),
		a.gateCommand(),
		a.auditCommand(),
		a.gcCommand(),
		a.killCommand(),
		a.mcpCommand(),
		a.installCommand(),
		a.uninstallCommand(),
		a.hookCommand(),
		a.guardCommand(),
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

// finish ends a command whose body lives in a package and answers with
// (answer, exit status, error): the answer, when there is one, is printed
// as JSON (writeJSON) — an answer that cannot be written ends the command
// with that error (exit 2, as any error without a status); status 0 is
// success, unless err is set: then err is passed on as is (a failure to
// write output); any other status ends the command with it and err's
// message (if any).
func (a *app) finish(answer any, status int, err error) error {
	if answer != nil {
		if werr := writeJSON(a.stdout, answer); werr != nil && err == nil {
			return werr
		}
	}
	return exit(status, err)
}

// exit is finish for a command that prints its own output and answers
// with (exit status, error).
func exit(status int, err error) error {
	if status == exitOK {
		return err
	}
	return &exitError{code: status, err: err}
}

// ---- the store and the engine service ----

// openService opens the shared store ($STRATUM_HOME/stratum.db, or what
// STRATUM_STORE / store: select: store/shared) and returns the engine
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
	// The result cache's bound, as the original's environment sets it.
	engine.ResultCache = engine.ParseCacheBound(os.Getenv("STRATUM_CACHE_MAX_AGE_DAYS"), os.Getenv("STRATUM_CACHE_MAX_ENTRIES"))
	// The commands its refusals advise name this stratum as it was invoked.
	return &engine.Service{Root: ".", Store: st, ParseSpec: exprlang.ParseSpec, OnDamaged: report, Invocation: runner.InvokedNow().Invocation(),
		NoResultCache: engine.ResultCacheDisabled(os.Getenv("STRATUM_DISABLE_RESULT_CACHE"))}, st, nil
}

// projectConfig is the configuration of the working directory
// ($STRATUM_HOME/config.yaml, then .stratum/config.yaml, then the
// environment), read once per process: the secrets to mask, the store
// settings and the console's keys all come from it. `stratum run` reads the
// spec's project instead (runner.ProjectDir).
var projectConfig = sync.OnceValues(func() (config.Config, error) { return config.Load(".") })

// storeSettings are the store settings: STRATUM_STORE and STRATUM_ETCD_*
// over store:/store_timeout:/etcd: of the config files (store/shared).
func storeSettings() (shared.Settings, error) {
	cfg, err := projectConfig()
	if err != nil {
		return shared.Settings{}, usageErr("%v", err)
	}
	s, err := shared.DefaultSettings(cfg)
	var se *shared.SettingsError
	if errors.As(err, &se) && se.Stage == shared.StageHome {
		return s, failErr(err)
	}
	if err != nil {
		return s, usageErr("%v", err)
	}
	s.ParseSpec = exprlang.ParseSpec
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

// report is finish for a store report (backend.Report): printed as JSON
// with --json, else as text.
func (a *app) report(jsonOut bool, r backend.Report, status int, err error) error {
	if r == nil || jsonOut {
		return a.finish(r, status, err)
	}
	if werr := r.WriteText(a.stdout); werr != nil && err == nil {
		return werr
	}
	return a.finish(nil, status, err)
}

// withFlow opens the service (openService), resolves FLOW — the id or a
// unique prefix of it (Query.ResolveFlowID) — and hands both to fn; a
// FLOW that does not resolve is the engine's answer (clijson.Answer).
func (a *app) withFlow(ctx context.Context, flow string, fn func(svc *engine.Service, id string) error) error {
	svc, _, err := openService(ctx)
	if err != nil {
		return err
	}
	id, err := svc.Query().ResolveFlowID(ctx, flow)
	if err != nil {
		return a.finish(clijson.Answer(nil, err))
	}
	return fn(svc, id)
}

// ---- validate, workflows, compile ----

func (a *app) validateCommand() *cobra.Command {
	var line specs.ValidateLine
	var watchF, strict bool
	cmd := &cobra.Command{
		Use:     "validate FILE|DIR...",
		Short:   "Check specs and report every problem with file:line:col",
		Long:    specs.ValidateHelp,
		Example: specs.ValidateExamples,
		RunE: func(cmd *cobra.Command, args []string) error {
			line.Paths, line.FormatSet, line.GitHub = args, cmd.Flags().Changed("format"), a.github
			format, err := line.Check()
			if err != nil {
				return usageErr("%v", err)
			}
			if watchF {
				return exit(specs.PathsStatus(watch.Report(cmd.Context(), args, format, a.stdout, a.stderr)))
			}
			return exit(specs.ValidatePaths(args, format, strict, exprlang.Compile, a.stdout))
		},
	}
	cmd.Flags().BoolVar(&line.JSON, "json", false, "print JSON (same as --format json)")
	cmd.Flags().StringVar(&line.Format, "format", specs.FormatHuman, "output format: human, json or github")
	cmd.Flags().BoolVarP(&watchF, "watch", "w", false, "keep running and re-validate on every save")
	cmd.Flags().BoolVar(&strict, "strict", false, "count warnings as errors (exit 1)")
	return cmd
}

func (a *app) workflowsCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "workflows [DIR]",
		Short:   "List the registered workflows (specs with a workflow: block) in DIR",
		Long:    specs.WorkflowsHelp,
		Example: specs.WorkflowsExamples,
		Args:    cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			list, err := specs.DiscoverWorkflows(dir, exprlang.Compile)
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
		Use:     "compile TASKS_DIR",
		Short:   "Compile spec-kit tasks/*.md into a .stratum.yaml flow",
		Long:    specs.CompileHelp,
		Example: specs.CompileExamples,
		Args:    cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return exit(specs.CompileTo(args[0], flowName, output, exprlang.Compile, a.stdout, a.stderr))
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "write the spec to this file instead of stdout")
	cmd.Flags().StringVar(&flowName, "flow", "tasks", "name of the generated flow")
	return cmd
}

// ---- migrate ----

func (a *app) migrateCommand() *cobra.Command {
	var o specs.MigrateOptions
	cmd := &cobra.Command{
		Use:     "migrate FILE",
		Short:   "Upgrade a spec's IR version, showing the diff and asking before writing",
		Long:    specs.MigrateHelp,
		Example: specs.MigrateExamples,
		Args:    cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return a.finish(specs.MigrateFile(args[0], o, exprlang.Compile, a.stdin, a.stdout))
		},
	}
	cmd.Flags().StringVar(&o.To, "to", "", "target IR version (default: the newest)")
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "write without asking")
	cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, "print the diff and write nothing")
	cmd.Flags().StringVar(&o.Output, "output", "", "write the migrated spec here instead of over FILE")
	cmd.Flags().BoolVar(&o.Force, "force", false, "let --output overwrite an existing file")
	cmd.Flags().BoolVar(&o.Backup, "backup", false, "keep FILE.bak when writing over FILE")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print {file, from, to, transforms, diff, written} as JSON instead of asking: it writes only with --yes")
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
		Use:     "plan SPEC",
		Short:   "Start a flow (stratum_plan) and print its first dispatch",
		Long:    runner.PlanHelp,
		Example: runner.PlanExamples,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, flow, inputs, err := runner.PlanArgs(args[0], flowName, inputKV, inputsFile)
			if err != nil {
				return usageErr("%v", err)
			}
			svc, _, err := openService(cmd.Context())
			if err != nil {
				return err
			}
			return a.finish(clijson.Answer(svc.Plan(cmd.Context(), string(src), flow, inputs, engine.PlanOptions{SpecFile: args[0]})))
		},
	}
	inputFlags(cmd, &flowName, &inputKV, &inputsFile)
	return cmd
}

func (a *app) stepDoneCommand() *cobra.Command {
	var result, resultFile string
	cmd := &cobra.Command{
		Use:     "step-done FLOW STEP",
		Short:   "Report a step's result (stratum_step_done) and print what comes next",
		Long:    runner.StepDoneHelp,
		Example: runner.StepDoneExamples,
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			v, err := runner.ParseResult(result, resultFile, a.stdin)
			if err != nil {
				return usageErr("%v", err)
			}
			return a.withFlow(cmd.Context(), args[0], func(svc *engine.Service, id string) error {
				return a.finish(clijson.Answer(svc.StepDone(cmd.Context(), engine.StepReport{FlowID: id, StepID: args[1], Result: v})))
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
			return a.withFlow(cmd.Context(), args[0], func(svc *engine.Service, id string) error {
				return a.finish(clijson.Answer(svc.Resume(cmd.Context(), id)))
			})
		},
	}
}

func (a *app) auditCommand() *cobra.Command {
	var text bool
	cmd := &cobra.Command{
		Use:     "audit FLOW",
		Short:   "Print the audit snapshot of one flow execution",
		Long:    clijson.AuditHelp,
		Example: clijson.AuditExamples,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withFlow(cmd.Context(), args[0], func(svc *engine.Service, id string) error {
				out, err := svc.Audit(cmd.Context(), id)
				if !text || err != nil {
					return a.finish(clijson.Answer(out, err))
				}
				return tui.WriteAuditText(a.stdout, out)
			})
		},
	}
	cmd.Flags().BoolVar(&text, "text", false, "print the audit for a person instead of JSON")
	return cmd
}

// ---- query, gate, kill, gc ----

func (a *app) queryCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "query",
		Short: "Print flows, one flow, or pending gates as JSON",
		Long:  clijson.QueryHelp,
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
			return exit(clijson.QueryFlows(ctx, svc, engine.ListFilter{Status: state.FlowStatus(status), Limit: limit}, a.stdout, time.Now()))
		}),
	}
	flows.Flags().StringVar(&status, "status", "", "only flows with this status: running, awaiting_gate, complete, killed, budget_exhausted or failed")
	flows.Flags().IntVar(&limit, "limit", 0, "at most this many flows (0 = all)")
	flow := &cobra.Command{
		Use:     "flow ID",
		Short:   "Print the full persisted state of one flow",
		Example: `  stratum query flow 3f2a1c | jq '{status, current_step_id, step_outputs}'`,
		Args:    cobra.ExactArgs(1),
		RunE: withService(func(ctx context.Context, svc *engine.Service, args []string) error {
			return a.finish(clijson.QueryFlow(ctx, svc, args[0], time.Now()))
		}),
	}
	gates := &cobra.Command{
		Use:     "gates",
		Short:   "List every gate waiting for a decision",
		Example: `  stratum query gates | jq -r '.[] | "\(.flow_id) \(.step_id)"'`,
		Args:    cobra.NoArgs,
		RunE: withService(func(ctx context.Context, svc *engine.Service, _ []string) error {
			return a.finish(clijson.QueryGates(ctx, svc))
		}),
	}
	cmd.AddCommand(flows, flow, gates)
	return cmd
}

func (a *app) gateCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "gate",
		Short: "Resolve a pending gate: approve, reject (kill) or revise",
		Long:  clijson.GateHelp,
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
		line := clijson.GateLine{Outcome: verb.outcome}
		c := &cobra.Command{
			Use:     verb.use + " FLOW STEP",
			Short:   verb.short,
			Example: fmt.Sprintf("  stratum gate %s 3f2a1c human --note \"looks good\"", verb.use),
			Args:    cobra.ExactArgs(2),
			RunE: func(cmd *cobra.Command, args []string) error {
				line.Set = cmd.Flags().Changed
				d, err := line.Decision(args[0], args[1])
				if err != nil {
					return usageErr("%v", err)
				}
				svc, _, err := openService(cmd.Context())
				if err != nil {
					return err
				}
				return a.finish(clijson.Gate(cmd.Context(), svc, d, a.humanConfirm(), a.stderr, time.Now()))
			},
		}
		c.Flags().StringVar(&line.Note, "note", "", "rationale recorded with the decision")
		c.Flags().StringVar(&line.ResolvedBy, "resolved-by", "human", "who decided: human, agent or system")
		c.Flags().StringVar(&line.Reviewer, "reviewer", "", "reviewer identity (default $USER)")
		c.Flags().IntVar(&line.Round, "round", 0, "refuse the decision unless the gate is in this round")
		if verb.outcome == review.Approve {
			c.Flags().IntVar(&line.Option, "option", 0, "a Go program's review: the option to pick, counted from 1")
			c.Flags().StringVar(&line.Value, "value", "", "a Go program's review: the value to decide (JSON, checked against the review's type)")
			c.Example += "\n  stratum gate approve 3f2a1c review-1 --option 2 --note \"the safer plan\"\n  stratum gate approve 3f2a1c review-2 --value '{\"ship\": true}'"
		}
		cmd.AddCommand(c)
	}
	return cmd
}

// humanConfirm is the confirmation an approver: human gate needs from a
// shell (gate, kill): a person on this terminal, who types it.
func (a *app) humanConfirm() review.HumanConfirm {
	return review.HumanConfirm{Terminal: isTerminal(a.stdin) && isTerminal(a.stderr), In: a.stdin, Out: a.stderr, Escape: specs.EscapeControl}
}

func (a *app) killCommand() *cobra.Command {
	var line clijson.KillLine
	cmd := &cobra.Command{
		Use:     "kill FLOW --reason TEXT",
		Short:   "End a flow nothing drives any more (a stalled run or Go program), recorded with who and why",
		Long:    clijson.KillHelp,
		Example: clijson.KillExamples,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := line.Request()
			if err != nil {
				return usageErr("%v", err)
			}
			svc, _, err := openService(cmd.Context())
			if err != nil {
				return err
			}
			return a.finish(clijson.KillFlow(cmd.Context(), svc, args[0], k, a.humanConfirm()))
		},
	}
	cmd.Flags().StringVar(&line.Reason, "reason", "", "why the flow is ended (required; recorded)")
	cmd.Flags().StringVar(&line.By, "by", "", "who ends it (default $USER)")
	return cmd
}

func (a *app) gcCommand() *cobra.Command {
	var line clijson.GCLine
	cmd := &cobra.Command{
		Use:     "gc --older-than DURATION | --stalled --older-than DURATION | --damaged",
		Short:   "Delete finished flows (and their events) older than DURATION, or quarantine damaged ones",
		Long:    backend.GCHelp,
		Example: backend.GCExamples,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			line.Set = cmd.Flags().Changed
			mode, err := line.Mode()
			if err != nil {
				return usageErr("%v", err)
			}
			if mode == clijson.GCDamaged {
				return withStore(func(ctx context.Context, st *backend.Opened) error {
					return a.finish(backend.GCDamagedCommand(ctx, st))
				})(cmd, nil)
			}
			svc, _, err := openServiceNoSweep()
			if err != nil {
				return err
			}
			if mode == clijson.GCStale {
				return a.finish(clijson.GCStalled(cmd.Context(), svc, line.OlderThan, time.Now()))
			}
			return a.finish(clijson.GC(cmd.Context(), svc, line.OlderThan))
		},
	}
	cmd.Flags().DurationVar(&line.OlderThan, "older-than", 0, "minimum age of the flows to delete (e.g. 720h)")
	cmd.Flags().BoolVar(&line.Damaged, "damaged", false, "quarantine flows whose stored record cannot be decoded")
	cmd.Flags().BoolVar(&line.Stalled, "stalled", false, "end (as killed) the flows stalled for at least --older-than, instead of pruning")
	return cmd
}

// ---- mcp, install: the MCP server agents drive flows through ----

func (a *app) mcpCommand() *cobra.Command {
	var sweep time.Duration
	cmd := &cobra.Command{
		Use:     "mcp",
		Short:   "Serve the stratum tools to an agent over MCP (stdio)",
		Long:    mcpserver.ServeHelp,
		Example: mcpserver.ServeExamples,
		Args:    cobra.NoArgs,
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
			return failErr(mcpserver.Serve(cmd.Context(), svc, opts))
		},
	}
	cmd.Flags().DurationVar(&sweep, "sweep-interval", mcpserver.DefaultSweepInterval, "gate deadlines are applied as they fall due; this is how soon a failed sweep is retried (negative: no background enforcement)")
	return cmd
}

func (a *app) installCommand() *cobra.Command {
	var opts mcpserver.InstallOptions
	var jsonOut bool
	cmd := &cobra.Command{
		Use:     "install",
		Short:   "Set a project up for stratum: MCP server, CLAUDE.md block, skills",
		Long:    mcpserver.InstallHelp(),
		Example: mcpserver.InstallExamples,
		Args:    cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			opts.StratumHome = os.Getenv("STRATUM_HOME")
			return exit(mcpserver.InstallCommand(opts, a.stdout, jsonOut))
		},
	}
	cmd.Flags().StringVar(&opts.Dir, "dir", "", "start the project-root search here (default: the current directory)")
	cmd.Flags().StringVar(&opts.Command, "command", "", "command the client runs (default: the absolute path of this binary)")
	cmd.Flags().BoolVar(&opts.Codex, "codex", false, "also register the server in Codex's config.toml ($CODEX_HOME, default ~/.codex) and write AGENTS.md's block")
	cmd.Flags().BoolVar(&opts.Hooks, "hooks", false, "also register the Claude Code hooks that keep "+mcpserver.MemoryFile+" (.claude/settings.json)")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "print what would be written and change nothing")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the report as JSON")
	return cmd
}

func (a *app) hookCommand() *cobra.Command {
	return &cobra.Command{
		Use:       "hook " + strings.Join(mcpserver.HookNames(), "|"),
		Short:     "Run one of the Claude Code hooks install --hooks registers (JSON on stdin)",
		Long:      mcpserver.HookHelp,
		Example:   mcpserver.HookExamples,
		Args:      cobra.ExactArgs(1),
		ValidArgs: mcpserver.HookNames(),
		RunE: func(_ *cobra.Command, args []string) error {
			return failErr(mcpserver.RunHook(args[0], a.stdin, a.stdout, time.Now()))
		},
	}
}

func (a *app) guardCommand() *cobra.Command {
	return &cobra.Command{
		Use:       "guard " + strings.Join(guard.Actions(), "|"),
		Short:     "Guarded transitions of a resource: JSON arguments on stdin, as the stratum_guard_* tools",
		Long:      guard.CLIHelp,
		Example:   guard.CLIExamples,
		Args:      cobra.ExactArgs(1),
		ValidArgs: guard.Actions(),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, _, err := openService(cmd.Context())
			if err != nil {
				return err
			}
			g := &guard.Service{Store: svc.Store, Now: svc.Now, Run: runner.ExitStatus, Channel: "cli", Judge: runner.GuardJudge()}
			return exit(g.CLI(cmd.Context(), args[0], a.stdin, a.stdout))
		},
	}
}

func (a *app) doctorCommand() *cobra.Command {
	var opts doctor.Options
	var jsonOut bool
	cmd := &cobra.Command{
		Use:     "doctor",
		Short:   "Check what breaks runs: the store, the models and their keys, the agent CLIs, the MCP registration",
		Long:    doctor.Help,
		Example: doctor.Examples,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, cfgErr := projectConfig()
			opts.Config, opts.ConfigErr = cfg, cfgErr
			opts.Store = func(ctx context.Context) doctor.StoreProbe {
				s, err := storeSettings()
				if err != nil {
					return doctor.StoreProbe{Name: "the store", Open: err}
				}
				p := backend.Probe(ctx, s)
				return doctor.StoreProbe{Name: p.Name, Schema: p.Schema, Flows: p.Flows, Open: p.Open, Read: p.Read, Write: p.Write, WriteProbed: p.WriteProbed}
			}
			opts.Invocation = runner.InvokedNow().Invocation()
			return exit(doctor.Command(cmd.Context(), opts, a.stdout, jsonOut))
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
		Use:     "uninstall",
		Short:   "Remove what \"stratum install\" added to this project",
		Long:    mcpserver.UninstallHelp,
		Example: mcpserver.UninstallExamples,
		Args:    cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			return exit(mcpserver.UninstallCommand(opts, a.stdout, jsonOut))
		},
	}
	cmd.Flags().StringVar(&opts.Dir, "dir", "", "start the project-root search here (default: the current directory)")
	cmd.Flags().BoolVar(&opts.Codex, "codex", false, "also remove the Codex registration ($CODEX_HOME, default ~/.codex) and AGENTS.md's block")
	cmd.Flags().BoolVar(&opts.KeepSkills, "keep-skills", false, "leave the skills in .claude/skills")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "print what would be removed and change nothing")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the report as JSON")
	return cmd
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
		Use:     "run SPEC",
		Short:   "Run a flow in-process: commands, LLM calls, agent CLIs, gates, budgets",
		Long:    runner.CommandHelp,
		Example: runner.CommandExamples,
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			line.Args, line.Set = args, cmd.Flags().Changed
			open := func(ctx context.Context) (*engine.Service, error) { svc, _, err := openService(ctx); return svc, err }
			rep, code, err := line.Main(cmd.Context(), open, runner.Setup{Record: recordF, Replay: replayFile, Stdin: a.stdin,
				Stderr: a.stderr, Terminal: isTerminal(a.stdin) && isTerminal(a.stderr), GitHub: a.github,
				Invocation: runner.InvokedNow().Invocation()}, junitFile, jsonOut)
			if err != nil {
				// The --json report of a run that did not start, then why.
				if rep != nil {
					_ = writeJSON(a.stdout, rep)
				}
				return exit(a.runStatus(err))
			}
			return a.finish(rep, code, nil) // the --json report, or the completed flow's output
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

// runStatus is the exit of an error of starting a run
// (runner.ErrorStatus); opening the store's keep theirs.
func (a *app) runStatus(err error) (int, error) {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code, ee.err
	}
	return runner.ErrorStatus(err, a.stderr, a.github)
}

// isTerminal reports whether f (behind its masking: runner.Unmasked) is
// an interactive terminal (review.IsTerminal, the one rule: a file whose
// descriptor answers the terminal ioctl; /dev/null is not one).
func isTerminal(f any) bool {
	if w, ok := f.(io.Writer); ok {
		f = runner.Unmasked(w)
	}
	file, ok := f.(*os.File)
	return ok && review.IsTerminal(file)
}

// ---- tui ----

func (a *app) tuiCommand() *cobra.Command {
	var plain, once, noColor bool
	var specDirs []string
	cmd := &cobra.Command{
		Use:     "tui [DIR...]",
		Short:   "The operator console: flows, live trace, gates, checkpoints, iterations, specs",
		Long:    tui.CommandHelp,
		Example: tui.CommandExamples,
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
			err = tui.Command(cmd.Context(), tui.CommandOptions{Service: svc, Backend: opened.Name(), Invocation: runner.InvokedNow().Invocation(), Plain: plain, Once: once,
				NoColor: noColor, SpecDirs: append(specDirs, args...), Config: cfg, ConfigErr: cfgErr,
				SweepInterval: mcpserver.DefaultSweepInterval, Terminal: isTerminal(a.stdout) && isTerminal(a.stdin), In: a.stdin, Out: a.stdout})
			return exit(runner.ErrorStatus(err, a.stderr, a.github))
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
		Long:  backend.StoreHelp,
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(a.storeInfoCommand(), a.storeCopyCommand(), a.storeCheckCommand(), a.storeCompactCommand())
	return cmd
}

func (a *app) storeCompactCommand() *cobra.Command {
	var jsonOut, defrag bool
	var keep int64
	cmd := &cobra.Command{
		Use:     "compact [--keep N] [--defrag]",
		Short:   "Compact the etcd cluster's history; with --defrag return the space and disarm NOSPACE",
		Long:    backend.CompactHelp,
		Example: backend.CompactExamples,
		Args:    cobra.NoArgs,
		RunE: withStore(func(ctx context.Context, st *backend.Opened) error {
			r, status, err := backend.CompactCommand(ctx, st, etcdstore.CompactOptions{Keep: keep, Defrag: defrag})
			return a.report(jsonOut, r, status, err)
		}),
	}
	cmd.Flags().Int64Var(&keep, "keep", 0, "how many of the latest revisions to keep (default 1000)")
	cmd.Flags().BoolVar(&defrag, "defrag", false, "defragment each member after compacting (one at a time), then disarm a NOSPACE alarm")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print JSON")
	return cmd
}

func (a *app) storeCheckCommand() *cobra.Command {
	var jsonOut bool
	cmd := &cobra.Command{
		Use:     "check",
		Short:   "Check the bbolt file: pages (bbolt's check), then flows, summaries and indexes",
		Long:    backend.CheckHelp,
		Example: backend.CheckExamples,
		Args:    cobra.NoArgs,
		RunE: withStore(func(ctx context.Context, st *backend.Opened) error {
			r, status, err := backend.CheckCommand(ctx, st)
			return a.report(jsonOut, r, status, err)
		}),
	}
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print JSON")
	return cmd
}

func (a *app) storeInfoCommand() *cobra.Command {
	var jsonOut bool
	cmd := &cobra.Command{
		Use:     "info",
		Short:   "Print the backend, its endpoints or path, schema version and counts",
		Long:    backend.InfoHelp,
		Example: backend.InfoExamples,
		Args:    cobra.NoArgs,
		RunE: withStore(func(ctx context.Context, st *backend.Opened) error {
			r, status, err := backend.InfoCommand(ctx, st)
			return a.report(jsonOut, r, status, err)
		}),
	}
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print JSON")
	return cmd
}

func (a *app) storeCopyCommand() *cobra.Command {
	var from, to string
	var force bool
	cmd := &cobra.Command{
		Use:     "copy --from SRC --to DST [--force]",
		Short:   "Copy flows, events and the cache from one store to another",
		Long:    backend.CopyHelp,
		Example: backend.CopyExamples,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if from == "" || to == "" {
				return usageErr("store copy needs --from SRC and --to DST")
			}
			settings, err := storeSettings()
			if err != nil {
				return err
			}
			return a.finish(backend.CopyCommand(cmd.Context(), from, to, settings, force))
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "source store: a bbolt path or etcd://HOST:PORT[,…]/PREFIX")
	cmd.Flags().StringVar(&to, "to", "", "destination store, same forms")
	cmd.Flags().BoolVar(&force, "force", false, "replace the flows the destination shares with the source")
	return cmd
}
