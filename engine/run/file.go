package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/specs/exprlang"

	"github.com/stratum-go/stratum/engine/config"
	"github.com/stratum-go/stratum/engine/internal/infer"
	"github.com/stratum-go/stratum/engine/internal/otlp"
	"github.com/stratum-go/stratum/engine/internal/redact"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs"
)

// UsageError is a run request that cannot start as asked: a missing spec
// file, an unknown flow, an --approve naming no gate. The CLI exits 2.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func usage(format string, a ...any) error { return &UsageError{Err: fmt.Errorf(format, a...)} }

// SpecError is a spec file that does not validate; the CLI prints its
// diagnostics and exits 2.
type SpecError struct {
	File        string
	Diagnostics specs.Diagnostics
}

func (e *SpecError) Error() string { return e.File + ": invalid spec" }

// WriteDiagnostics prints the spec's diagnostics as `stratum validate`
// does, in one of the specs.Format* formats.
func (e *SpecError) WriteDiagnostics(w io.Writer, format string) error {
	return specs.WriteResults(w, format, []specs.FileResult{specs.NewFileResult(e.File, e.Diagnostics)})
}

// ErrorStatus is the exit of `stratum run` (and `stratum tui`) for the
// error the command ended with (CommandLine.Main's, tui.Command's): an
// invalid spec prints its diagnostics on stderr (as `stratum validate`
// does; github annotations under GitHub Actions) and exits 2 with nothing
// more said; a usage problem exits 2 with its message; anything else (a
// store or executor failure) exits 1 with it; nil is 0.
func ErrorStatus(err error, stderr io.Writer, github bool) (status int, _ error) {
	var se *SpecError
	var ue *UsageError
	switch {
	case err == nil:
		return ExitComplete, nil
	case errors.As(err, &se):
		format, _ := specs.ChooseFormat(specs.FormatHuman, false, false, github)
		_ = se.WriteDiagnostics(stderr, format)
		return ExitUsage, nil
	case errors.As(err, &ue):
		return ExitUsage, ue.Err
	}
	return ExitFailed, err
}

// LoadSpecFile reads and validates a spec file.
func LoadSpecFile(file string) (*specs.Spec, error) {
	src, err := os.ReadFile(file)
	if err != nil {
		return nil, &UsageError{Err: err}
	}
	sp, ds := specs.Parse(file, src, exprlang.Compile)
	if sp == nil || ds.HasErrors() {
		return nil, &SpecError{File: file, Diagnostics: ds}
	}
	return sp, nil
}

// DefaultFlow is the flow to run when none is named: the workflow's entry
// flow, else the spec's only flow.
func DefaultFlow(sp *specs.Spec) (string, error) {
	if sp.Workflow != nil && sp.Workflow.EntryFlow != "" {
		return sp.Workflow.EntryFlow, nil
	}
	if len(sp.FlowNames) == 1 {
		return sp.FlowNames[0], nil
	}
	return "", usage("%s has %d flows (%s): choose one with --flow", sp.File, len(sp.FlowNames), strings.Join(sp.FlowNames, ", "))
}

// PlanFlow is the flow `stratum plan` starts in the spec file (src read
// from file): flow when named, else DefaultFlow. A spec that does not parse
// cleanly leaves flow "" without an error, so the engine's plan answers it
// with the original's error envelope.
func PlanFlow(file string, src []byte, flow string) (string, error) {
	if flow != "" {
		return flow, nil
	}
	if sp, ds := specs.Parse(file, src, exprlang.Compile); sp != nil && !ds.HasErrors() {
		return DefaultFlow(sp)
	}
	return "", nil
}

// PlanArgs reads `stratum plan SPEC`'s spec file and inputs: the spec's
// text, the flow to plan (PlanFlow) and the inputs (ParseInputs from the
// --input fields kv and the --inputs file, coerced to the flow's declared
// types: CoerceInputs). Every error is a problem with the command line.
func PlanArgs(file, flowName string, kv []string, inputsFile string) (src []byte, flow string, inputs map[string]any, err error) {
	if src, err = os.ReadFile(file); err != nil {
		return nil, "", nil, err
	}
	if inputs, err = ParseInputs(kv, inputsFile); err != nil {
		return nil, "", nil, err
	}
	if flow, err = PlanFlow(file, src, flowName); err != nil {
		return nil, "", nil, err
	}
	if sp, _ := specs.Parse(file, src, exprlang.Compile); sp != nil {
		inputs = CoerceInputs(sp, flow, inputs, TextInputs(kv))
	}
	return src, flow, inputs, nil
}

// FileRequest is a run of a spec file, as `stratum run SPEC` asks for it.
type FileRequest struct {
	File   string
	Flow   string // "" = DefaultFlow
	Inputs map[string]any
	// TextInputs are the --input fields as typed (TextInputs), read as
	// their declared types (CoerceInputs); nil for none.
	TextInputs map[string]string
	// Approve are the --approve values: gate step ids or "all"; each id
	// must name a gate of the spec.
	Approve []string
}

// StartFile validates a spec file and the request against it, then starts
// the flow (Start). A *UsageError or *SpecError means nothing was started.
func (r *Runner) StartFile(ctx context.Context, req FileRequest) (*Outcome, error) {
	sp, err := LoadSpecFile(req.File)
	if err != nil {
		return nil, err
	}
	flow := req.Flow
	if flow == "" {
		if flow, err = DefaultFlow(sp); err != nil {
			return nil, err
		}
	}
	if sp.Flows[flow] == nil {
		return nil, usage("%s has no flow %q (flows: %s)", req.File, flow, strings.Join(sp.FlowNames, ", "))
	}
	var gates []string
	for _, fn := range sp.FlowNames {
		for _, s := range sp.Flows[fn].Steps {
			if s.IsGate() {
				gates = append(gates, s.ID)
			}
		}
	}
	for _, g := range req.Approve {
		if g != "all" && !slices.Contains(gates, g) {
			return nil, usage("--approve %q: %s has no gate step with that id (gates: %s)", g, req.File, strings.Join(gates, ", "))
		}
	}
	return r.Start(ctx, sp, flow, CoerceInputs(sp, flow, req.Inputs, req.TextInputs))
}

// Report is the --json document of a finished run: the flow's audit (the
// original's stratum_audit, engine.Wire) plus `run` (RunBlock); when the
// flow never started, {final: the engine's answer, run}.
func Report(ctx context.Context, svc *engine.Service, out *Outcome) (engine.Response, error) {
	run := &RunBlock{Status: out.Status, ExitCode: out.ExitCode, Message: out.Message,
		Output: runOutput(out), Iterations: map[string]IterationResult{}}
	if out.FlowID == "" {
		return engine.Response{"final": engine.Wire(out.Final, out.FinalErr), "run": run}, nil
	}
	audit, err := svc.Audit(ctx, out.FlowID)
	if err != nil {
		return nil, err
	}
	rep := engine.Wire(audit, nil)
	if f, err := svc.Query().FlowWithSpec(ctx, out.FlowID); err == nil {
		run.BudgetState = f.State.BudgetState
		run.Calls = f.State.Trace
		run.Iterations = iterationResults(f)
	}
	rep["run"] = run
	return rep, nil
}

// ErrorReport is the --json document of a run that could not start: an
// invalid spec (*SpecError: its diagnostics), a usage problem
// (*UsageError) — both run.status "invalid", exit 2 — or any other
// failure (a store or executor that could not be opened: "error", exit
// 1). `stratum run --json` prints a JSON object on every outcome.
func ErrorReport(err error) engine.Response {
	final := engine.Response{"status": "error", "message": err.Error()}
	run := &RunBlock{Status: EndError, ExitCode: ExitFailed, Message: err.Error(), Iterations: map[string]IterationResult{}}
	var se *SpecError
	var ue *UsageError
	switch {
	case errors.As(err, &se):
		run.Status, run.ExitCode = EndInvalid, ExitUsage
		final["diagnostics"] = se.Diagnostics
		if errs := se.Diagnostics.Errors(); len(errs) > 0 {
			final["error_type"], final["message"], final["path"] = errs[0].ErrorType, errs[0].Message, errs[0].Path
			run.Message = fmt.Sprintf("%s: invalid spec: %s", se.File, errs[0].Message)
		}
	case errors.As(err, &ue):
		run.Status, run.ExitCode = EndInvalid, ExitUsage
	}
	return engine.Response{"final": final, "run": run}
}

// RunBlock is the `run` object of the --json report.
type RunBlock struct {
	Status   string `json:"status"` // Outcome.Status: complete, failed, killed, …
	ExitCode int    `json:"exit_code"`
	Message  string `json:"message"`
	// Output is the flow's output when the run completed: the completion's
	// output, i.e. the output of the last step in execution order that has
	// one (as the original's completion). It is null for every run that
	// did not complete: failed, killed (even when a cleanup step ran),
	// budget exhausted, stopped at a gate, interrupted, error, invalid.
	Output any `json:"output"`
	// Iterations has one entry per iterating step (max_iterations) of the
	// flow whose loop reported in the current round, keyed by step id; {}
	// when none did.
	Iterations  map[string]IterationResult `json:"iterations"`
	BudgetState *state.BudgetState         `json:"budget_state"`
	Calls       []json.RawMessage          `json:"calls"`
}

// IterationResult is the end of an iterating step's last loop.
type IterationResult struct {
	// Iterations is how many reports the loop made.
	Iterations int `json:"iterations"`
	// Outcome is the loop's last outcome: exit_success, exit_stagnation,
	// exit_max, exit_abort, or continue while the loop is still running.
	Outcome string `json:"outcome"`
	// Result is the step's recorded output — the loop's final result (the
	// best-scoring one for score_expr loops, with accumulated and
	// accumulated_count merged in for accumulate loops) — or null when the
	// step recorded none (the loop is running or was aborted, or the flow
	// stopped before step_done).
	Result any `json:"result"`
	// Accumulated is an accumulate loop's deduplicated items (the result's
	// accumulated); absent for other steps and when the result has none.
	Accumulated any `json:"accumulated,omitempty"`
}

// runOutput is RunBlock.Output: the completion's output of a completed run.
func runOutput(out *Outcome) any {
	if c, ok := out.Final.(*engine.Completion); ok && out.Status == EndComplete && c.Status == state.StatusComplete {
		return c.Output
	}
	return nil
}

// iterationResults reads RunBlock.Iterations from the flow's state: the
// current round's iteration history of each step with max_iterations, and
// the step's output.
func iterationResults(f *engine.FlowWithSpec) map[string]IterationResult {
	out := map[string]IterationResult{}
	if f.Flow == nil {
		return out
	}
	for _, step := range f.Flow.OrderedSteps() {
		hist := f.State.Iterations[step.ID]
		if step.MaxIterations <= 0 || len(hist) == 0 {
			continue
		}
		last := hist[len(hist)-1]
		res := IterationResult{Iterations: last.Iteration, Outcome: last.Outcome, Result: f.State.StepOutputs[step.ID]}
		if m, ok := res.Result.(map[string]any); ok && step.Accumulate != nil {
			res.Accumulated = m["accumulated"]
		}
		out[step.ID] = res
	}
	return out
}

// WriteJUnitFile writes the JUnit report of a run to path.
func WriteJUnitFile(path string, out *Outcome) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	werr := WriteJUnit(f, out)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
}

// Executors are what a runner executes with, built from the config: the
// infer executor (LLM providers, with --record/--replay), the agent
// executor, and the OTLP tracer when OTEL_EXPORTER_OTLP_ENDPOINT is set.
// Close flushes the spans, reporting problems on w.
type Executors struct {
	Infer  engine.Executor
	Agent  engine.Executor
	Tracer Tracer
	Close  func(w io.Writer)
}

// NewExecutors builds the executors of a run. record and replay are the
// --record and --replay files ("" for none).
func NewExecutors(cfg config.Config, record, replay string) (Executors, error) {
	red := Redactor(cfg)
	ex, err := infer.NewExecutor(infer.Setup{Record: record, Replay: replay, DefaultModel: cfg.DefaultModel, BaseURLs: cfg.BaseURLs,
		CallTimeout: cfg.LLMTimeout, Redact: red})
	if err != nil {
		return Executors{}, &UsageError{Err: err}
	}
	x := Executors{Infer: ex, Agent: &AgentExecutor{Agents: Agents(cfg.Agents)}, Close: func(io.Writer) {}}
	exp := otlp.FromEnv(red)
	if exp == nil {
		return x, nil
	}
	x.Tracer = exp.Tracker()
	x.Close = func(w io.Writer) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := exp.Shutdown(ctx); err != nil {
			fmt.Fprintln(w, "stratum: otlp export:", err)
		}
		if n := exp.Dropped(); n > 0 {
			fmt.Fprintf(w, "stratum: otlp export dropped %d spans\n", n)
		}
	}
	return x, nil
}

// ProjectDir is the directory whose .stratum/config.yaml applies to a run
// of file ("." for none).
func ProjectDir(file string) string {
	if file == "" {
		return "."
	}
	return filepath.Dir(file)
}

// Redactor masks the secrets of the environment and of the configuration
// (config.Config.Secrets) in what a run writes: the one way a run builds it.
func Redactor(cfg config.Config) *redact.Redactor {
	return redact.FromEnv(os.Environ(), cfg.Secrets()...)
}

// Unmasked is the writer behind a masking writer of a Redactor (its
// Writer), else w: what a front end asks whether it is a terminal, and
// what the full-screen console draws on (its text comes from the store,
// whose recorded errors are masked already).
func Unmasked(w io.Writer) io.Writer {
	if u, ok := w.(interface{ Unwrap() io.Writer }); ok {
		return u.Unwrap()
	}
	return w
}
