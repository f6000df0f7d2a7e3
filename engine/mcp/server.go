package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stratum-go/stratum/engine"
)

// Error types this package adds to the engine's envelopes.
const (
	// ErrTypeInvalidArguments: a tool was called with missing, mistyped or
	// out-of-range arguments.
	ErrTypeInvalidArguments = "invalid_arguments"
	// ErrTypeInternal: an unexpected failure (store error, panic); details
	// go to the log only.
	ErrTypeInternal = string(engine.ErrTypeInternal)
	// ErrTypeStoreUpgraded: a newer stratum migrated the store under this
	// server (engine.ErrNewerStore); every tool that touches the store
	// answers it, with what to do, until the server is restarted with the
	// newer stratum. Nothing is read or written meanwhile.
	ErrTypeStoreUpgraded = "store_upgraded"
)

// DefaultSweepInterval is the default of Options.SweepInterval: how soon a
// failed sweep of gate deadlines is tried again.
const DefaultSweepInterval = 3 * time.Second

// Options configure the server.
type Options struct {
	// Log receives the server's diagnostics (default io.Discard). Stdout is
	// the protocol, so this is normally stderr.
	Log io.Writer
	// Version is reported as the server implementation's version.
	Version string
	// SweepInterval is how soon Serve's deadline enforcer
	// (svc.EnforceDeadlines, which sleeps until the next gate deadline and
	// learns of new ones from events) retries a sweep that failed. Zero
	// means DefaultSweepInterval; negative disables the enforcer.
	SweepInterval time.Duration
	// MaxWait caps stratum_wait_gate's timeout_seconds (default 300 s).
	MaxWait time.Duration
	// Store names the store the server shares, with its schema version
	// ("PATH (schema N)"): Serve logs it first, since a client may start
	// the server with another $STRATUM_HOME than the shell's ("": not
	// logged).
	Store string
	// Interactive says stdin is a terminal: Serve first tells the person
	// at it that it speaks MCP and is meant to be started by a client.
	Interactive bool
}

// server holds what the tool handlers share.
type server struct {
	svc  *engine.Service
	opts Options
	log  *slog.Logger
	// tools are the registered tools' bodies by name (addTool).
	tools map[string]toolRun

	// Server-dispatched fan-outs (stratum_parallel_start), by flow and
	// step; bg is their context, cancelled when the server stops.
	fanMu  sync.Mutex
	fans   map[fanKey]*fanRun
	fanWG  sync.WaitGroup
	bg     context.Context
	bgStop context.CancelFunc

	// Background runs (stratum_flow_run_bg), by flow.
	bgs bgState
	// Agent runs in flight (stratum_agent_run), by correlation id.
	agents agentRuns
}

// NewServer builds the MCP server with every stratum tool registered on svc.
// It starts no goroutine; Serve adds the stdio transport and the deadline
// sweeper.
func NewServer(svc *engine.Service, opts Options) *mcp.Server {
	srv, _ := newServer(svc, opts)
	return srv
}

func newServer(svc *engine.Service, opts Options) (*mcp.Server, *server) {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.MaxWait <= 0 {
		opts.MaxWait = 300 * time.Second
	}
	log := slog.New(slog.NewTextHandler(&lockedWriter{w: opts.Log}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	s := &server{svc: svc, opts: opts, log: log, fans: map[fanKey]*fanRun{}, tools: map[string]toolRun{},
		bgs: bgState{runs: map[string]*bgRun{}, ends: map[string]bgEnd{}}, agents: agentRuns{ids: map[string]context.CancelFunc{}}}
	s.bg, s.bgStop = context.WithCancel(context.Background())
	srv := mcp.NewServer(&mcp.Implementation{Name: "stratum", Title: "stratum", Version: opts.Version}, &mcp.ServerOptions{
		Instructions: instructions,
		Logger:       slog.New(quietHandler{slog.NewTextHandler(&lockedWriter{w: opts.Log}, &slog.HandlerOptions{Level: slog.LevelWarn})}),
	})
	s.registerCoreTools(srv)
	s.registerAddedTools(srv)
	s.registerJudgeTools(srv)
	s.registerParallelTools(srv)
	s.registerBgTools(srv)
	s.registerAgentTools(srv)
	s.registerGuardTools(srv)
	s.registerGoalTools(srv)
	s.registerUnsupportedTools(srv)
	return srv, s
}

// Serve runs the server over stdin/stdout until the client disconnects or
// ctx is cancelled, sweeping expired gate deadlines in the background. A
// client closing the connection (EOF) or a cancelled ctx is a clean end.
// Each inbound frame is checked first (frames.go): one over
// jsonlimit.MaxBytes or nested deeper than jsonlimit.MaxDepth, invalid
// JSON, a batch or a non-message is answered with a JSON-RPC error and the
// server goes on.
func Serve(ctx context.Context, svc *engine.Service, opts Options) error {
	if opts.Interactive && opts.Log != nil {
		fmt.Fprintln(opts.Log, "stratum mcp: speaking MCP on stdin/stdout; it is meant to be started by an MCP client (see stratum install). Ctrl-C to stop.")
	}
	if opts.Store != "" && opts.Log != nil {
		fmt.Fprintf(opts.Log, "stratum mcp: store %s\n", opts.Store)
	}
	srv, s := newServer(svc, opts)
	// Server-dispatched fan-outs end with the server: their tasks are
	// cancelled (process groups killed, worktrees removed).
	defer s.stopFanOuts()
	// Background runs stop with the server, leaving their leases to
	// expire: the next server adopts them (adoptLoop).
	defer s.stopBg()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.adoptLoop(ctx)
	}()
	if opts.SweepInterval >= 0 {
		interval := opts.SweepInterval
		if interval == 0 {
			interval = DefaultSweepInterval
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sweep(ctx, svc, interval, opts.Log)
		}()
	}
	logOut := opts.Log
	if logOut == nil {
		logOut = io.Discard
	}
	frameLog := slog.New(slog.NewTextHandler(&lockedWriter{w: logOut}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	t := newStdioTransport(os.Stdin, os.Stdout, frameLog)
	t.lean = &leanCalls{srv: srv, tools: s.tools}
	err := srv.Run(ctx, t)
	cancel()
	wg.Wait()
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) || errors.Is(err, mcp.ErrConnectionClosed) {
		return nil
	}
	return err
}

// sweep applies expired gate deadlines as they fall due until ctx ends
// (engine.Service.EnforceDeadlines), logging what it applied or failed on.
func sweep(ctx context.Context, svc *engine.Service, retry time.Duration, w io.Writer) {
	if w == nil {
		w = io.Discard
	}
	err := svc.EnforceDeadlines(ctx, retry, func(n int, err error) {
		if err != nil {
			fmt.Fprintf(w, "stratum mcp: sweeping gate deadlines: %v\n", err)
			return
		}
		fmt.Fprintf(w, "stratum mcp: applied %d expired gate deadline(s)\n", n)
	})
	if err != nil && ctx.Err() == nil {
		fmt.Fprintf(w, "stratum mcp: gate deadlines are not enforced in the background: %v\n", err)
	}
}

// lockedWriter serialises writes from the SDK's logger, ours and the sweeper.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// quietHandler drops the SDK's report of a cancelled run: Ctrl-C or
// SIGTERM is a normal way to stop the server.
type quietHandler struct{ slog.Handler }

func (h quietHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "server run cancelled" {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h quietHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return quietHandler{h.Handler.WithAttrs(as)}
}

func (h quietHandler) WithGroup(name string) slog.Handler {
	return quietHandler{h.Handler.WithGroup(name)}
}

// argError is a bad argument found by a handler's own checks.
type argError struct{ msg string }

func (e *argError) Error() string { return e.msg }

func badArgs(format string, a ...any) error { return &argError{msg: fmt.Sprintf(format, a...)} }

// invalidArguments is the envelope of a bad tool call.
func invalidArguments(msg string) engine.Response {
	return engine.Response{"status": "error", "success": false, "error_type": ErrTypeInvalidArguments, "message": msg}
}

// storeUpgraded is the envelope of a tool call refused because a newer
// stratum migrated the store: an MCP host shows the answer, not the
// server's stderr, so the answer says what to do.
func storeUpgraded(err error) engine.Response {
	return engine.Response{"status": "error", "success": false, "error_type": ErrTypeStoreUpgraded,
		"message": "This stratum MCP server is older than its store: " + err.Error() +
			". Restart the MCP server (restart the agent's session, or its MCP servers) so it runs the newer stratum, " +
			"or upgrade the stratum binary the agent host starts; nothing was read or written."}
}

// internalError is the engine's envelope of an unexpected failure; it never
// carries the failure's details.
func internalError() engine.Response { return engine.Wire(nil, errUnexpected) }

var errUnexpected = errors.New("unexpected failure")

// toolFunc is a tool's body: it returns the wire response, an *argError for
// bad arguments, or any other error for an unexpected failure.
type toolFunc[In any] func(ctx context.Context, req *mcp.CallToolRequest, in In) (engine.Response, error)

// jsonToolFunc is a tool's body that writes its answer's JSON itself: the
// bytes json.Marshal writes of the wire response (engine.WireJSON: the
// audit, whose answer is the longest), or errors as toolFunc's.
type jsonToolFunc[In any] func(ctx context.Context, req *mcp.CallToolRequest, in In) (json.RawMessage, error)

// addTool registers a tool whose arguments decode into In and whose result
// is the engine response, as structured content and the same JSON as text
// (marshaled once). Bad arguments and unexpected failures (errors, panics)
// become invalid_arguments / internal_error envelopes with isError set; the
// failure's details go to the log. The same body answers the tool's calls
// that the connection takes past the SDK session (lean.go).
func addTool[In any](srv *mcp.Server, s *server, t *mcp.Tool, f toolFunc[In]) {
	addJSONTool(srv, s, t, func(ctx context.Context, req *mcp.CallToolRequest, in In) (json.RawMessage, error) {
		resp, err := f(ctx, req, in)
		if err != nil || resp == nil {
			return nil, err
		}
		return marshalResponse(resp)
	})
}

// marshalResponse is the JSON of a tool's wire response.
func marshalResponse(resp engine.Response) (json.RawMessage, error) {
	b, err := json.Marshal(resp)
	if err != nil {
		return nil, fmt.Errorf("tool result is not JSON: %w", err)
	}
	return b, nil
}

// addJSONTool registers a tool as addTool does, whose body writes its
// answer's JSON (jsonToolFunc).
func addJSONTool[In any](srv *mcp.Server, s *server, t *mcp.Tool, f jsonToolFunc[In]) {
	spec := specOf[In]()
	t.InputSchema = inputSchema[In]()
	run := func(ctx context.Context, req *mcp.CallToolRequest) ([]byte, bool, error) {
		return s.call(ctx, t.Name, func() (json.RawMessage, error) {
			in, err := decodeArgs[In](req.Params.Arguments, spec)
			if err != nil {
				return nil, err
			}
			return f(ctx, req, in)
		})
	}
	s.tools[t.Name] = run
	srv.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		b, isErr, err := run(ctx, req)
		if err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{IsError: isErr, StructuredContent: json.RawMessage(b),
			Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
	})
}

// toolRun is a registered tool's body as addTool wraps it: the result's
// JSON and whether it is an error envelope, or the context's error.
type toolRun func(ctx context.Context, req *mcp.CallToolRequest) (result []byte, isErr bool, err error)

// call runs one tool body, mapping failures to envelopes: it returns the
// JSON of the answer and whether it is an error envelope, or the context's
// error.
func (s *server) call(ctx context.Context, tool string, f func() (json.RawMessage, error)) (resp json.RawMessage, isErr bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("tool panicked", "tool", tool, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			resp, isErr, err = internalErrorJSON, true, nil
		}
	}()
	resp, err = f()
	var ae *argError
	switch {
	case err == nil && resp == nil:
		s.log.Error("tool returned no response", "tool", tool)
		return internalErrorJSON, true, nil
	case err == nil:
		return resp, false, nil
	case errors.As(err, &ae):
		b, jerr := json.Marshal(invalidArguments(ae.msg))
		if jerr != nil {
			return internalErrorJSON, true, nil
		}
		return b, true, nil
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		// The client cancelled the call; the SDK reports the cancellation.
		return nil, false, err
	case errors.Is(err, engine.ErrNewerStore):
		s.log.Error("tool failed", "tool", tool, "error", err.Error())
		b, jerr := json.Marshal(storeUpgraded(err))
		if jerr != nil {
			return internalErrorJSON, true, nil
		}
		return b, true, nil
	default:
		s.log.Error("tool failed", "tool", tool, "error", err.Error())
		return internalErrorJSON, true, nil
	}
}

// internalErrorJSON is the JSON of internalError.
var internalErrorJSON = func() json.RawMessage {
	b, err := json.Marshal(internalError())
	if err != nil {
		panic(err) // a constant envelope
	}
	return b
}()

// instructions is sent to clients at initialisation.
const instructions = `stratum tracks flow executions of typed specs (*.stratum.yaml). Drive a flow like this:
1. stratum_plan(spec, flow, inputs) creates the flow and returns the first dispatch (status execute_step).
2. Do the step's work yourself (intent, inputs, output_fields, ensure), then report the JSON result with
   stratum_step_done(flow_id, step_id, result). ensure_failed / schema_failed return the same step with
   violations to fix; execute_step returns the next step; complete ends the flow.
3. At status await_gate, a reviewer decides: call stratum_wait_gate(flow_id) to wait for a decision made
   elsewhere (TUI, "stratum gate"), or stratum_gate_resolve if you are allowed to decide (approver: human
   gates refuse MCP decisions).
4. stratum_audit(flow_id) returns the full trace at any time. Flow state lives in the shared store, so
   stratum_resume(flow_id) continues a flow after a restart.
Every flow_id argument also takes a unique prefix of the id (at least 4 characters, as the CLI and TUI
show them); an ambiguous prefix answers error_type ambiguous_flow_id with candidates (the matching ids).
Errors are {status:"error", error_type, message}.`
