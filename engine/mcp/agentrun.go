package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/config"
	"github.com/stratum-go/stratum/engine/internal/contract"
	"github.com/stratum-go/stratum/engine/run"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs"
	"github.com/stratum-go/stratum/specs/exprlang"
)

// Agent runs (stratum_agent_run, stratum_cancel_agent_run), the original's
// ad-hoc dispatch of a prompt to claude or codex, on the agent commands of
// `stratum run` (run.RunAgentCall: the configured or default CLI, its own
// process group, the output cap). Each output line is sent as a progress
// notification when the call carries a progress token; a schema is checked
// as a contract (violations make result null, as a parse error does); a
// call whose correlation_id names a flow is refused once that flow's budget
// is spent and is charged to it (an agent dispatch and its time) after.

// agentRunStep is the step id an agent run is charged to (the original's).
const agentRunStep = "_agent_run"

type agentRunArgs struct {
	Prompt          string         `json:"prompt" jsonschema:"the prompt (required)"`
	Type            string         `json:"type,omitempty" jsonschema:"the agent: claude (default) or codex, or an agent configured under agents:"`
	Context         string         `json:"context,omitempty" jsonschema:"text put before the prompt, verbatim"`
	Schema          map[string]any `json:"schema,omitempty" jsonschema:"a JSON Schema the answer must match: the agent is asked for JSON, which is parsed and checked"`
	ModelID         string         `json:"modelID,omitempty" jsonschema:"the model (codex: MODEL or MODEL/EFFORT)"`
	ModelIDSnake    string         `json:"model_id,omitempty" jsonschema:"the same as modelID"`
	AllowedTools    []string       `json:"allowed_tools,omitempty" jsonschema:"claude: the tools the agent may use"`
	DisallowedTools []string       `json:"disallowed_tools,omitempty" jsonschema:"claude: tools the agent may not use"`
	Thinking        map[string]any `json:"thinking,omitempty" jsonschema:"claude: extended thinking, e.g. {type: enabled, budget_tokens: 8000}"`
	Effort          string         `json:"effort,omitempty" jsonschema:"codex: reasoning effort (minimal, low, medium, high, xhigh)"`
	Cwd             string         `json:"cwd,omitempty" jsonschema:"the agent's working directory (default: the server's)"`
	ReadJail        string         `json:"read_jail,omitempty" jsonschema:"confine the agent's reads to this directory (refused when no jail is available)"`
	CorrelationID   string         `json:"correlation_id,omitempty" jsonschema:"an id to cancel the run by (default: a new one); a flow id charges the run to that flow's budget"`
}

type cancelAgentArgs struct {
	CorrelationID string `json:"correlation_id" jsonschema:"the correlation_id of the run to cancel"`
}

// agentRuns are the agent runs in flight, by correlation id.
type agentRuns struct {
	mu  sync.Mutex
	ids map[string]context.CancelFunc
}

func (s *server) registerAgentTools(srv *mcp.Server) {
	addTool(srv, s, &mcp.Tool{Name: "stratum_agent_run", Description: `Run a prompt against an AI agent CLI (claude or codex, as configured for stratum run) and return its answer.
Inputs: prompt (str, required); type ('claude'|'codex', default 'claude'); context (str, put before the prompt); schema (JSON Schema: the agent is asked for JSON, which is parsed and checked against it); modelID / model_id; allowed_tools, disallowed_tools, thinking (claude); effort (codex); cwd; read_jail; correlation_id (to cancel it with stratum_cancel_agent_run; a flow id charges the run to that flow's budget).
Returns {text, correlation_id} and with a schema result (the parsed JSON) or result: null with parseError (and violations when it did not match). Each output line is sent as a progress notification when the call has a progress token. Refused: {status: "budget_exhausted", text: "", correlation_id, budget_state}; {status: "cancelled"} when cancelled; {status: "error", error_type, message} when the agent failed.`},
		s.agentRun)
	addTool(srv, s, &mcp.Tool{Name: "stratum_cancel_agent_run", Description: `Cancel an in-flight stratum_agent_run identified by correlation_id (its process group is killed). Idempotent: returns {status: 'not_found'} if no matching run exists. Input: correlation_id (str). Returns {status: 'cancelled'|'not_found', correlation_id: str}.`},
		s.cancelAgentRun)
}

func (s *server) cancelAgentRun(_ context.Context, _ *mcp.CallToolRequest, in cancelAgentArgs) (engine.Response, error) {
	if err := required("correlation_id", in.CorrelationID); err != nil {
		return nil, err
	}
	s.agents.mu.Lock()
	cancel := s.agents.ids[in.CorrelationID]
	s.agents.mu.Unlock()
	if cancel == nil {
		return engine.Response{"status": "not_found", "correlation_id": in.CorrelationID}, nil
	}
	cancel()
	return engine.Response{"status": "cancelled", "correlation_id": in.CorrelationID}, nil
}

func (s *server) agentRun(ctx context.Context, req *mcp.CallToolRequest, in agentRunArgs) (engine.Response, error) {
	call, checker, err := s.agentCall(in)
	if err != nil {
		return nil, err
	}
	if in.ReadJail != "" {
		return engine.Response{"status": "error", "error_type": "read_jail_unavailable", "correlation_id": in.CorrelationID,
			"message": "read_jail: no read jail is available on this host, and the agent is never run unconfined when one is asked for; run it without read_jail, or confine it yourself (a container) and configure that command as the agent"}, nil
	}
	id := in.CorrelationID
	if id == "" {
		id = engine.NewUUID()
	}
	flow, spent, err := s.agentBudget(ctx, id)
	if err != nil {
		return nil, err
	}
	if spent != "" {
		resp := engine.Response{"status": string(state.StatusBudgetExhausted), "text": "", "correlation_id": id, "message": spent}
		if flow != nil && flow.BudgetState != nil {
			resp["budget_state"] = flow.BudgetState
		}
		return resp, nil
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.agents.mu.Lock()
	if _, busy := s.agents.ids[id]; busy {
		s.agents.mu.Unlock()
		return nil, badArgs("correlation_id %q names an agent run in flight", id)
	}
	s.agents.ids[id] = cancel
	s.agents.mu.Unlock()
	defer func() {
		s.agents.mu.Lock()
		delete(s.agents.ids, id)
		s.agents.mu.Unlock()
	}()
	call.OnLine = s.progressLines(ctx, req, id)
	start := time.Now()
	text, runErr := run.RunAgentCall(runCtx, call)
	if flow != nil {
		c := engine.CallRecord{StepID: agentRunStep, Attempt: 1, DurationMS: time.Since(start).Milliseconds(), Agent: true, Executor: "agent"}
		if _, err := s.svc.RecordCall(context.WithoutCancel(ctx), flow.FlowID, c, engine.ReportOptions{}); err != nil {
			s.log.Error("charging an agent run to its flow", "flow_id", flow.FlowID, "error", err.Error())
		}
	}
	switch {
	case runErr != nil && ctx.Err() != nil:
		return nil, ctx.Err() // the client cancelled the call
	case runErr != nil && runCtx.Err() != nil:
		return engine.Response{"status": "cancelled", "text": "", "correlation_id": id}, nil
	case runErr != nil:
		msg := runErr.Error()
		var ae *engine.AttemptError
		if errors.As(runErr, &ae) {
			msg = strings.Join(ae.Violations, "; ")
		}
		return engine.Response{"status": "error", "error_type": "agent_failed", "message": fmt.Sprintf("stratum_agent_run (%s): %s", call.Agent, msg), "correlation_id": id}, nil
	}
	text = strings.TrimSpace(text)
	if in.Schema == nil {
		return engine.Response{"text": text, "correlation_id": id}, nil
	}
	resp := engine.Response{"text": text, "result": nil, "correlation_id": id}
	v, ok := parseAgentJSON(text)
	if !ok {
		resp["parseError"] = "Response was not valid JSON"
		return resp, nil
	}
	if vs := checker.Check(v); len(vs) > 0 {
		resp["parseError"] = "Response does not match the schema"
		resp["violations"] = vs
		return resp, nil
	}
	resp["result"] = v
	return resp, nil
}

// agentCall checks the arguments and builds the call (without OnLine).
func (s *server) agentCall(in agentRunArgs) (run.AgentCall, *contract.Checker, error) {
	var c run.AgentCall
	if strings.TrimSpace(in.Prompt) == "" {
		return c, nil, badArgs("stratum_agent_run: prompt is required")
	}
	c.Agent = in.Type
	if c.Agent == "" {
		c.Agent = "claude"
	}
	if in.Cwd != "" {
		if fi, err := os.Stat(in.Cwd); err != nil || !fi.IsDir() {
			return c, nil, badArgs("cwd %q is not a directory", in.Cwd)
		}
		c.Dir = in.Cwd
	}
	dir := c.Dir
	if dir == "" {
		dir = "."
	}
	cfg, err := config.Load(dir)
	if err != nil {
		return c, nil, badArgs("%v", err)
	}
	c.Agents = run.Agents(cfg.Agents)
	cmd, ok := c.Agents[c.Agent]
	if !ok {
		return c, nil, badArgs("stratum_agent_run: unknown type %q (claude, codex, or an agent configured under agents:)", c.Agent)
	}
	var checker *contract.Checker
	if in.Schema != nil {
		if checker, err = contract.New("schema", in.Schema); err != nil {
			return c, nil, badArgs("schema is not a valid JSON Schema: %v", err)
		}
	}
	model := in.ModelID
	if model == "" {
		model = in.ModelIDSnake
	}
	c.Prompt = agentPrompt(in)
	c.Env = agentEnvOf(model, in)
	if len(cmd.Argv) > 0 { // shell text gets the settings through the environment only
		c.Args = agentArgs(c.Agent, model, in)
	}
	return c, checker, nil
}

// agentPrompt is the context, the prompt and, with a schema, the request
// for JSON that matches it.
func agentPrompt(in agentRunArgs) string {
	p := in.Prompt
	if strings.TrimSpace(in.Context) != "" {
		p = in.Context + "\n\n" + p
	}
	if in.Schema != nil {
		b, _ := json.MarshalIndent(in.Schema, "", "  ")
		p += "\n\nRespond with a single JSON object that matches this JSON Schema (as a ```json block, or the whole answer):\n```json\n" + string(b) + "\n```\n"
	}
	return p
}

// agentArgs are the command-line settings of claude and codex.
func agentArgs(agent, model string, in agentRunArgs) []string {
	var args []string
	switch agent {
	case "claude":
		if model != "" {
			args = append(args, "--model", model)
		}
		if len(in.AllowedTools) > 0 {
			args = append(args, "--allowedTools", strings.Join(in.AllowedTools, ","))
		}
		if len(in.DisallowedTools) > 0 {
			args = append(args, "--disallowedTools", strings.Join(in.DisallowedTools, ","))
		}
	case "codex":
		base, effort, _ := strings.Cut(model, "/")
		if in.Effort != "" {
			effort = in.Effort
		}
		if base != "" {
			args = append(args, "-m", base)
		}
		if effort != "" {
			args = append(args, "-c", `model_reasoning_effort="`+effort+`"`)
		}
	}
	return args
}

// agentEnvOf passes the settings to any agent command through the
// environment too (a configured wrapper reads them there).
func agentEnvOf(model string, in agentRunArgs) []string {
	env := []string{"STRATUM_AGENT_MODEL=" + model, "STRATUM_AGENT_EFFORT=" + in.Effort,
		"STRATUM_AGENT_ALLOWED_TOOLS=" + strings.Join(in.AllowedTools, ","),
		"STRATUM_AGENT_DISALLOWED_TOOLS=" + strings.Join(in.DisallowedTools, ",")}
	if n, ok := in.Thinking["budget_tokens"].(float64); ok && n > 0 {
		env = append(env, "MAX_THINKING_TOKENS="+strconv.FormatInt(int64(n), 10))
	}
	return env
}

// parseAgentJSON is the answer's JSON: the whole text, else its last
// ```json block or JSON object (run.LastJSONBlock).
func parseAgentJSON(text string) (any, bool) {
	var v any
	if json.Unmarshal([]byte(text), &v) == nil {
		return v, true
	}
	return run.LastJSONBlock([]byte(text))
}

// progressLines sends each output line as a progress notification (the
// original's stream envelope, as a fan-out's events: envelope) when the
// call carries a progress token.
func (s *server) progressLines(ctx context.Context, req *mcp.CallToolRequest, id string) func(string) {
	if req == nil || req.Session == nil || req.Params == nil {
		return nil
	}
	tok := req.Params.GetProgressToken()
	if tok == nil {
		return nil
	}
	seq := -1
	return func(line string) {
		seq++
		env := envelope(id, agentRunStep, "", seq, "agent_relay", map[string]any{"role": "assistant", "text": line})
		if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(seq), Message: string(env)}); err != nil && ctx.Err() == nil {
			s.log.Warn("agent run: progress notification", "error", err.Error())
		}
	}
}

// agentBudget reads the flow a correlation id names (nil when it names
// none) and says why its budget allows no further agent dispatch ("" when
// it does).
func (s *server) agentBudget(ctx context.Context, id string) (*state.FlowState, string, error) {
	st, err := s.svc.Query().Get(ctx, id)
	if isNotFound(err) || engine.AsError(err) != nil {
		return nil, "", nil
	} else if err != nil {
		return nil, "", err
	}
	if st.Status == state.StatusBudgetExhausted {
		return st, fmt.Sprintf("flow %s has exhausted its budget", id), nil
	}
	sp, ds := specs.Parse(st.SpecFile, []byte(st.RawSpec), exprlang.Compile)
	if sp == nil || ds.HasErrors() || sp.Flows[st.FlowName] == nil || sp.Flows[st.FlowName].Budget == nil {
		return st, "", nil
	}
	b, led := sp.Flows[st.FlowName].Budget, state.BudgetState{}
	if st.BudgetState != nil {
		led = *st.BudgetState
	}
	switch {
	case b.MaxAgentDispatches > 0 && led.AgentDispatch >= b.MaxAgentDispatches:
		return st, fmt.Sprintf("flow '%s' used its %d agent dispatches", st.FlowName, b.MaxAgentDispatches), nil
	case b.MS > 0 && led.SpentMS >= b.MS:
		return st, fmt.Sprintf("the time budget (ms) of flow '%s' is spent", st.FlowName), nil
	case b.Tokens > 0 && led.SpentTokens >= b.Tokens:
		return st, fmt.Sprintf("the token budget of flow '%s' is spent", st.FlowName), nil
	case b.USD != nil && led.SpentUSD >= *b.USD:
		return st, fmt.Sprintf("the cost budget (usd) of flow '%s' is spent", st.FlowName), nil
	}
	return st, "", nil
}
