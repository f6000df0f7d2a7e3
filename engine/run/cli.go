package run

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/config"
	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/specs"
)

// CommandLine is what `stratum run` was given, before it is checked.
type CommandLine struct {
	Args       []string // positional arguments: the SPEC (none with --resume)
	Resume     string   // --resume FLOW_ID
	Flow       string   // --flow
	Inputs     []string // --input NAME=VALUE, repeated
	InputsFile string   // --inputs FILE
	// Approve are the --approve values; each may list gates separated by
	// commas.
	Approve []string
	OnGate  string // --on-gate ("" = prompt on a terminal, else exit)
	Cache   string // --cache
	// KeepWorktrees is --keep-worktrees: fan-out task worktrees stay.
	KeepWorktrees bool
	// Set reports whether the named flag was given (nil: none was).
	Set func(flag string) bool
}

// Request is a checked `stratum run` command line: either a spec file to
// start (File, Flow, Inputs) or a stored flow to continue (Resume).
type Request struct {
	File   string // "" with Resume
	Resume string
	Flow   string
	Inputs map[string]any
	// TextInputs are the --input fields as typed (see CoerceInputs).
	TextInputs map[string]string
	Approve    []string // gate step ids or "all", one per element
	OnGate     string   // one of the review.OnGate* constants
	Cache      string   // one of the Cache* constants
	// KeepWorktrees leaves fan-out task worktrees (and branches) in place.
	KeepWorktrees bool
}

// FileRequest is the request as StartFile takes it.
func (r Request) FileRequest() FileRequest {
	return FileRequest{File: r.File, Flow: r.Flow, Inputs: r.Inputs, TextInputs: r.TextInputs, Approve: r.Approve}
}

// Check turns the command line into a Request. terminal says whether
// stdin and stderr are a terminal: --on-gate then defaults to prompt, else
// to exit. Every problem is a *UsageError.
func (c CommandLine) Check(terminal bool) (Request, error) {
	set := c.Set
	if set == nil {
		set = func(string) bool { return false }
	}
	switch {
	case c.Resume == "" && len(c.Args) != 1:
		return Request{}, usage("run needs a SPEC (or --resume ID)")
	case c.Resume != "" && len(c.Args) == 1:
		return Request{}, usage("--resume continues a stored flow with its stored spec; do not pass SPEC")
	}
	if c.Resume != "" {
		for _, f := range []string{"flow", "input", "inputs"} {
			if set(f) {
				return Request{}, usage("--resume continues a stored flow with its stored inputs; --%s does not apply", f)
			}
		}
	}
	req := Request{Resume: c.Resume, Flow: c.Flow, OnGate: c.OnGate, Cache: c.Cache, KeepWorktrees: c.KeepWorktrees}
	if req.OnGate == "" {
		req.OnGate = review.OnGateExit
		if terminal {
			req.OnGate = review.OnGatePrompt
		}
	}
	if !review.ValidOnGate(req.OnGate) {
		return Request{}, usage("--on-gate %q: want exit, wait, approve, kill or prompt", req.OnGate)
	}
	switch req.Cache {
	case CacheNone, CacheSession, CacheGlobal:
	default:
		return Request{}, usage("--cache %q: want none, session or global", req.Cache)
	}
	for _, s := range c.Approve {
		for _, g := range strings.Split(s, ",") {
			if g = strings.TrimSpace(g); g != "" {
				req.Approve = append(req.Approve, g)
			}
		}
	}
	if c.Resume == "" {
		req.File = c.Args[0]
		inputs, err := ParseInputs(c.Inputs, c.InputsFile)
		if err != nil {
			return Request{}, &UsageError{Err: err}
		}
		req.Inputs, req.TextInputs = inputs, TextInputs(c.Inputs)
	}
	return req, nil
}

// Conclude reports a finished run as `stratum run` does: why a run that
// could not start did not (on stderr), the JUnit report when junit names a
// file, and what the caller prints on stdout: with asJSON the --json report
// (Report); without, the flow's output when the run completed (the
// completion's output, as the report's run.output), else nil (nothing to
// print). The error is a failure to write the JUnit file or to read the
// report; the exit status is out.ExitCode.
func Conclude(ctx context.Context, svc *engine.Service, out *Outcome, stderr io.Writer, junit string, asJSON bool) (any, error) {
	if out.Status == EndInvalid || out.NotRun {
		fmt.Fprintln(stderr, "stratum:", specs.EscapeControl(out.Message))
	}
	if junit != "" && out.Status != EndInvalid {
		if err := WriteJUnitFile(junit, out); err != nil {
			return nil, err
		}
	}
	if !asJSON {
		return runOutput(out), nil
	}
	return Report(context.WithoutCancel(ctx), svc, out)
}

// Main is `stratum run` behind its flags: it checks the command line
// (Check, with s.Terminal), loads the configuration of the spec's project
// into s.Config (ProjectDir), opens the service with open, executes the
// run and concludes it (Execute, Conclude). It returns what the command
// prints on stdout as JSON (nil: nothing), the exit status of a run that
// ended, and the error of a run that did not start — a *UsageError, a
// *SpecError, open's or Execute's error; with asJSON the report is then
// ErrorReport's object — or that could not be concluded.
func (c CommandLine) Main(ctx context.Context, open func(context.Context) (*engine.Service, error), s Setup, junit string, asJSON bool) (report any, exit int, err error) {
	notStarted := func(err error) (any, int, error) {
		if asJSON {
			return ErrorReport(err), 0, err
		}
		return nil, 0, err
	}
	req, err := c.Check(s.Terminal)
	if err != nil {
		return notStarted(err)
	}
	if s.Config, err = config.Load(ProjectDir(req.File)); err != nil {
		return notStarted(&UsageError{Err: err})
	}
	svc, err := open(ctx)
	if err != nil {
		return notStarted(err)
	}
	out, err := Execute(ctx, svc, req, s)
	if err != nil {
		return notStarted(err)
	}
	if report, err = Conclude(ctx, svc, out, s.Stderr, junit, asJSON); err != nil {
		return nil, 0, err
	}
	return report, out.ExitCode, nil
}

// Setup is what a run from the command line executes with besides its
// Request: the merged configuration (providers, agents), the --record and
// --replay files, and the process's terminal.
type Setup struct {
	Config         config.Config
	Record, Replay string
	Stdin          io.Reader // the console prompt reads here
	Stderr         io.Writer // progress, prompts and exporter problems
	Terminal       bool      // stdin and stderr are a terminal
	GitHub         bool      // running under GitHub Actions: annotations
	// Invocation runs this stratum in the next steps the run prints
	// (Invoked.Invocation).
	Invocation string
}

// Execute runs req on svc as `stratum run` does: it builds the executors
// (NewExecutors), a Runner with the request's gate policy and cache, a
// console prompt and a progress printer, then starts the spec file
// (StartFile) or continues the stored flow (Resume). Errors are those of
// NewExecutors, StartFile and Resume. --resume takes any unique prefix of
// the flow id (engine.Query.ResolveFlowID); an ambiguous one ends the run
// with exit 2 and the candidates, an unknown one Resume's "no flow" answer.
func Execute(ctx context.Context, svc *engine.Service, req Request, s Setup) (*Outcome, error) {
	if req.Resume != "" {
		id, err := svc.Query().ResolveFlowID(ctx, req.Resume)
		switch e := engine.AsError(err); {
		case err == nil:
			req.Resume = id
		case e == nil:
			return nil, err
		case e.Type != engine.ErrTypeFlowNotFound:
			return &Outcome{FlowID: req.Resume, Status: EndInvalid, ExitCode: ExitUsage, Message: e.Message}, nil
		}
	}
	var stdin io.Reader
	if s.Stdin != nil {
		stdin = bufio.NewReader(s.Stdin)
	}
	x, err := NewExecutors(s.Config, s.Record, s.Replay)
	if err != nil {
		return nil, err
	}
	defer x.Close(s.Stderr)
	r := New(Options{
		Service: svc,
		Redact:  Redactor(s.Config),
		Infer:   x.Infer,
		Agent:   x.Agent,
		Tracer:  x.Tracer,
		// One reader of stdin for the policy's confirmations and the
		// console, and one human-presence rule for both (review.HumanConfirm).
		Gates: review.Policy{Approve: req.Approve, OnGate: req.OnGate,
			Human: review.HumanConfirm{Terminal: s.Terminal, In: stdin, Out: s.Stderr, Escape: specs.EscapeControl}},
		Console:  &review.Console{In: stdin, Out: s.Stderr, Terminal: s.Terminal},
		Progress: &Printer{W: s.Stderr, Terminal: s.Terminal, GitHub: s.GitHub},
		Cache:    req.Cache,
		// Fan-out worktrees: kept ones are printed with the progress.
		KeepWorktrees: req.KeepWorktrees,
		Log:           s.Stderr,
		Invocation:    s.Invocation,
	})
	if req.Resume != "" {
		return r.Resume(ctx, req.Resume)
	}
	return r.StartFile(ctx, req.FileRequest())
}
