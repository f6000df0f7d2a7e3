package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/config"
)

// DefaultAgents are the built-in agent commands; the config's agents are
// added over them (Agents).
var DefaultAgents = map[string]config.Command{
	"claude": {Argv: []string{"claude", "-p", "--output-format", "text"}},
	"codex":  {Argv: []string{"codex", "exec", "-"}},
}

// Agents is DefaultAgents with configured agents added or replacing them.
// In a command's arguments (or shell text), {prompt_file} is replaced by the
// path of a file holding the prompt and {dir} by the working directory; the
// prompt is also written to the process's stdin. An argument gets the value
// as it is (no shell sees it); shell text gets it quoted for where the
// placeholder stands (shellSubstitute), so a value is never shell syntax.
func Agents(configured map[string]config.Command) map[string]config.Command {
	out := make(map[string]config.Command, len(DefaultAgents)+len(configured))
	for k, v := range DefaultAgents {
		out[k] = v
	}
	for k, v := range configured {
		out[k] = v
	}
	return out
}

// AgentExecutor runs inline steps with `agent: NAME` through an agent CLI:
// the step's prompt (intent, inputs, expected output fields, ensures, the
// previous attempt's violations) goes to the CLI's stdin and the JSON result
// is parsed from the output's last JSON block (a ```json fence, or the last
// JSON object). Non-zero exit, no JSON and the deadline are failed attempts.
type AgentExecutor struct {
	// Agents maps agent names to commands (see Agents); nil means
	// DefaultAgents.
	Agents map[string]config.Command
	// MaxOutput caps the agent's stdout (default DefaultMaxOutput).
	MaxOutput int
}

// Execute runs one attempt.
func (a *AgentExecutor) Execute(ctx context.Context, req engine.StepRequest) (engine.StepOutcome, error) {
	agents := a.Agents
	if agents == nil {
		agents = DefaultAgents
	}
	ac, ok := agents[req.Step.Agent]
	if !ok {
		names := make([]string, 0, len(agents))
		for k := range agents {
			names = append(names, k)
		}
		sort.Strings(names)
		return engine.StepOutcome{}, &engine.AttemptError{Kind: engine.AttemptConfig, Violations: []string{fmt.Sprintf(
			"unknown agent %q (configured: %s); add it under agents: in $STRATUM_HOME/config.yaml or .stratum/config.yaml", req.Step.Agent, strings.Join(names, ", "))}}
	}
	prompt := AgentPrompt(req)
	tmp, err := os.CreateTemp("", "stratum-prompt-*.md")
	if err != nil {
		return engine.StepOutcome{}, err
	}
	defer os.Remove(tmp.Name())
	_, _ = tmp.WriteString(prompt)
	_ = tmp.Close()
	vals := map[string]string{"prompt_file": tmp.Name(), "dir": req.Dir}
	repl := strings.NewReplacer("{prompt_file}", vals["prompt_file"], "{dir}", vals["dir"])
	p := process{
		name:         "agent " + req.Step.Agent,
		dir:          req.Dir,
		env:          agentEnv(req, tmp.Name()),
		stdin:        strings.NewReader(prompt),
		maxOut:       a.MaxOutput,
		startFailure: engine.AttemptConfig,
	}
	if len(ac.Argv) > 0 {
		p.argv = make([]string, len(ac.Argv))
		for i, s := range ac.Argv {
			p.argv[i] = repl.Replace(s)
		}
	} else {
		p.shell = shellSubstitute(ac.Shell, vals)
	}
	ctx, cancel := withBudget(ctx, req.Budget)
	defer cancel()
	stdout, _, err := p.run(ctx)
	if err != nil {
		return engine.StepOutcome{}, err
	}
	v, ok := LastJSONBlock(stdout)
	if !ok {
		return engine.StepOutcome{}, &engine.AttemptError{Kind: engine.AttemptBadJSON, Violations: []string{
			fmt.Sprintf("agent output contains no JSON result (end the answer with the result as a ```json block); output ends %q", tailString(string(stdout), 200))}}
	}
	return engine.StepOutcome{Output: v}, nil
}

func tailString(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// AgentPrompt is the prompt an agent CLI receives for one attempt.
func AgentPrompt(req engine.StepRequest) string {
	var b strings.Builder
	step := req.Step
	b.WriteString(strings.TrimSpace(req.Intent()))
	b.WriteString("\n")
	if req.Task != nil {
		t, _ := json.MarshalIndent(req.Task, "", "  ")
		b.WriteString("\nYour task (id, description, files_owned — the only files you may change —, files_read, depends_on):\n```json\n" + string(t) + "\n```\n")
	}
	if len(req.Inputs) > 0 {
		in, _ := json.MarshalIndent(req.Inputs, "", "  ")
		b.WriteString("\nInputs:\n```json\n" + string(in) + "\n```\n")
	}
	if f := req.Feedback(); f != nil {
		b.WriteString("\n" + f.Prompt() + "\n")
	}
	if len(req.Violations) > 0 {
		b.WriteString("\nPrevious attempt failed:\n")
		for _, v := range req.Violations {
			b.WriteString("  - " + v + "\n")
		}
		b.WriteString("Fix these issues specifically.\n")
	}
	b.WriteString("\nWhen you are done, end your answer with the result as one JSON object in a ```json block")
	if c := req.Spec.Contracts[step.OutputContract]; c != nil {
		fields := make([]string, 0, len(c.Fields))
		for _, f := range c.Fields {
			t := f.Type
			if t == "" {
				t = "any"
			}
			fields = append(fields, fmt.Sprintf("%q (%s)", f.Name, t))
		}
		b.WriteString(" with the fields " + strings.Join(fields, ", "))
	}
	b.WriteString(".\n")
	if len(step.Ensure) > 0 {
		b.WriteString("The result must satisfy:\n")
		for _, e := range step.Ensure {
			if e != nil {
				b.WriteString("  - " + e.Source + "\n")
			}
		}
	}
	return b.String()
}

// LastJSONBlock extracts the last JSON block of a text: the last ```json (or
// bare ```) fence that holds valid JSON, else the last top-level JSON object
// or array in the text.
func LastJSONBlock(out []byte) (any, bool) {
	text := string(out)
	var fenced any
	found := false
	rest := text
	for {
		i := strings.Index(rest, "```")
		if i < 0 {
			break
		}
		body := rest[i+3:]
		nl := strings.IndexByte(body, '\n')
		if nl < 0 {
			break
		}
		lang := strings.TrimSpace(body[:nl])
		body = body[nl+1:]
		j := strings.Index(body, "```")
		if j < 0 {
			break
		}
		if lang == "" || strings.EqualFold(lang, "json") {
			if v, err := decodeOne([]byte(strings.TrimSpace(body[:j]))); err == nil {
				fenced, found = v, true
			}
		}
		rest = body[j+3:]
	}
	if found {
		return fenced, true
	}
	var last any
	ok := false
	for i := 0; i < len(out); i++ {
		if out[i] != '{' && out[i] != '[' {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(out[i:]))
		var v any
		if err := dec.Decode(&v); err != nil {
			continue
		}
		last, ok = v, true
		i += int(dec.InputOffset()) - 1
	}
	return last, ok
}

// agentEnv is an agent CLI's environment: stratum's ids, the prompt file
// and, for a fan-out task, its id and worktree.
func agentEnv(req engine.StepRequest, promptFile string) []string {
	env := append(os.Environ(), "STRATUM_FLOW_ID="+req.FlowID, "STRATUM_STEP_ID="+req.Step.ID, "STRATUM_PROMPT_FILE="+promptFile)
	if req.Task != nil {
		env = append(env, "STRATUM_TASK_ID="+req.TaskID())
	}
	if req.Worktree != "" {
		env = append(env, "STRATUM_WORKTREE="+req.Worktree)
	}
	return env
}

// AgentCall is one prompt run through an agent CLI outside a flow step
// (the MCP tool stratum_agent_run): the same commands (Agents), process
// handling and output cap as an agent step.
type AgentCall struct {
	// Agent names the command (claude, codex, or a configured agent).
	Agent string
	// Agents maps agent names to commands (nil: DefaultAgents).
	Agents map[string]config.Command
	// Args are added to an argv command: before a final "-" (codex's
	// prompt-on-stdin marker), else at the end. A shell command gets
	// none (AgentCallArgs says so).
	Args []string
	// Prompt goes to the process's stdin and to {prompt_file}.
	Prompt string
	// Dir is the working directory ("" for the current one).
	Dir string
	// Env is added to the process's environment.
	Env []string
	// OnLine receives each line of the agent's output as it is written.
	OnLine func(string)
	// MaxOutput caps the agent's stdout (default DefaultMaxOutput).
	MaxOutput int
}

// ErrShellAgent: arguments were asked of an agent configured as shell text.
var ErrShellAgent = errors.New("the agent is configured as shell text, which takes no added arguments; configure it as an argument list")

// RunAgentCall runs the call's agent with its prompt and returns its
// output. A failure (unknown agent, start failure, non-zero exit, output
// too large) is an *engine.AttemptError naming the agent; ctx ending kills
// the agent's process group and returns ctx's error.
func RunAgentCall(ctx context.Context, c AgentCall) (string, error) {
	agents := c.Agents
	if agents == nil {
		agents = DefaultAgents
	}
	ac, ok := agents[c.Agent]
	if !ok {
		names := make([]string, 0, len(agents))
		for k := range agents {
			names = append(names, k)
		}
		sort.Strings(names)
		return "", &engine.AttemptError{Kind: engine.AttemptConfig, Violations: []string{fmt.Sprintf(
			"unknown agent %q (configured: %s)", c.Agent, strings.Join(names, ", "))}}
	}
	tmp, err := os.CreateTemp("", "stratum-prompt-*.md")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	_, _ = tmp.WriteString(c.Prompt)
	_ = tmp.Close()
	vals := map[string]string{"prompt_file": tmp.Name(), "dir": c.Dir}
	repl := strings.NewReplacer("{prompt_file}", vals["prompt_file"], "{dir}", vals["dir"])
	p := process{name: "agent " + c.Agent, dir: c.Dir, env: append(append(os.Environ(), "STRATUM_PROMPT_FILE="+tmp.Name()), c.Env...),
		stdin: strings.NewReader(c.Prompt), maxOut: c.MaxOutput, startFailure: engine.AttemptConfig, onLine: c.OnLine}
	switch {
	case len(ac.Argv) > 0:
		argv := make([]string, 0, len(ac.Argv)+len(c.Args))
		for _, s := range ac.Argv {
			argv = append(argv, repl.Replace(s))
		}
		if n := len(argv); n > 1 && argv[n-1] == "-" {
			argv = append(append(argv[:n-1:n-1], c.Args...), "-")
		} else {
			argv = append(argv, c.Args...)
		}
		p.argv = argv
	case len(c.Args) > 0:
		return "", &engine.AttemptError{Kind: engine.AttemptConfig, Violations: []string{fmt.Sprintf("agent %s: %v", c.Agent, ErrShellAgent)}}
	default:
		p.shell = shellSubstitute(ac.Shell, vals)
	}
	out, _, err := p.run(ctx)
	return string(out), err
}
