package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/stratum-go/stratum/engine"
)

// AgentCommand is how an agent CLI is started: Argv (preferred) or Shell
// (run by `sh -c`). The prompt is written to the process's stdin; in
// arguments, {prompt_file} is replaced by the path of a file holding the
// prompt and {dir} by the working directory.
type AgentCommand struct {
	Argv  []string `yaml:"command,omitempty"`
	Shell string   `yaml:"shell,omitempty"`
}

// DefaultAgents are the built-in agent commands (overridable in config).
var DefaultAgents = map[string]AgentCommand{
	"claude": {Argv: []string{"claude", "-p", "--output-format", "text"}},
	"codex":  {Argv: []string{"codex", "exec", "-"}},
}

// Config is the run configuration read from $STRATUM_HOME/config.yaml
// (default ~/.stratum) and then .stratum/config.yaml in the spec's directory
// (later files win, key by key):
//
//	default_model: openai/gpt-4o-mini   # infer steps without a model
//	base_urls: {ollama: "http://gpu-box:11434/v1"}
//	agents:
//	  claude: [claude, -p, --model, opus]          # argv
//	  mine: "my-agent --json < {prompt_file}"      # sh -c
//	  other: {command: [other, --print]}
type Config struct {
	Agents       map[string]AgentCommand
	DefaultModel string
	BaseURLs     map[string]string
}

// ConfigFiles are the config files LoadConfig reads, in order.
func ConfigFiles(dir string) []string {
	var files []string
	if home := os.Getenv("STRATUM_HOME"); home != "" {
		files = append(files, filepath.Join(home, "config.yaml"))
	} else if h, err := os.UserHomeDir(); err == nil {
		files = append(files, filepath.Join(h, ".stratum", "config.yaml"))
	}
	if dir != "" {
		files = append(files, filepath.Join(dir, ".stratum", "config.yaml"))
	}
	return files
}

// LoadConfig reads the config files of dir over the defaults (DefaultAgents).
// Missing files are fine; malformed ones are errors naming the file.
func LoadConfig(dir string) (Config, error) {
	cfg := Config{Agents: map[string]AgentCommand{}, BaseURLs: map[string]string{}}
	for k, v := range DefaultAgents {
		cfg.Agents[k] = v
	}
	for _, f := range ConfigFiles(dir) {
		b, err := os.ReadFile(f)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return cfg, err
		}
		var raw struct {
			Agents       map[string]yaml.Node `yaml:"agents"`
			DefaultModel string               `yaml:"default_model"`
			BaseURLs     map[string]string    `yaml:"base_urls"`
		}
		if err := yaml.Unmarshal(b, &raw); err != nil {
			return cfg, fmt.Errorf("%s: %v", f, err)
		}
		if raw.DefaultModel != "" {
			cfg.DefaultModel = raw.DefaultModel
		}
		for k, v := range raw.BaseURLs {
			cfg.BaseURLs[k] = v
		}
		for name, node := range raw.Agents {
			var ac AgentCommand
			switch node.Kind {
			case yaml.ScalarNode:
				ac.Shell = node.Value
			case yaml.SequenceNode:
				if err := node.Decode(&ac.Argv); err != nil {
					return cfg, fmt.Errorf("%s: agents.%s: %v", f, name, err)
				}
			case yaml.MappingNode:
				if err := node.Decode(&ac); err != nil {
					return cfg, fmt.Errorf("%s: agents.%s: %v", f, name, err)
				}
			}
			if len(ac.Argv) == 0 && ac.Shell == "" {
				return cfg, fmt.Errorf("%s: agents.%s: want a command list, a shell string, or {command: [...]}", f, name)
			}
			cfg.Agents[name] = ac
		}
	}
	return cfg, nil
}

// LoadAgents is LoadConfig(dir).Agents.
func LoadAgents(dir string) (map[string]AgentCommand, error) {
	cfg, err := LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	return cfg.Agents, nil
}

// AgentExecutor runs inline steps with `agent: NAME` through an agent CLI:
// the step's prompt (intent, inputs, expected output fields, ensures, the
// previous attempt's violations) goes to the CLI's stdin and the JSON result
// is parsed from the output's last JSON block (a ```json fence, or the last
// JSON object). Non-zero exit, no JSON and the deadline are failed attempts.
type AgentExecutor struct {
	// Agents maps agent names to commands; nil loads them with LoadAgents
	// from the spec's directory on first use.
	Agents map[string]AgentCommand
	// MaxOutput caps the agent's stdout (default DefaultMaxOutput).
	MaxOutput int
}

// Execute runs one attempt.
func (a *AgentExecutor) Execute(ctx context.Context, req engine.StepRequest) (engine.StepOutcome, error) {
	agents := a.Agents
	if agents == nil {
		var err error
		agents, err = LoadAgents(req.Dir)
		if err != nil {
			return engine.StepOutcome{}, &engine.AttemptError{Kind: engine.AttemptConfig, Violations: []string{"agent configuration: " + err.Error()}}
		}
		a.Agents = agents
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
	repl := strings.NewReplacer("{prompt_file}", tmp.Name(), "{dir}", req.Dir)
	p := process{
		name:         "agent " + req.Step.Agent,
		dir:          req.Dir,
		env:          append(os.Environ(), "STRATUM_FLOW_ID="+req.FlowID, "STRATUM_STEP_ID="+req.Step.ID, "STRATUM_PROMPT_FILE="+tmp.Name()),
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
		p.shell = repl.Replace(ac.Shell)
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
	b.WriteString(strings.TrimSpace(engine.StepIntent(step)))
	b.WriteString("\n")
	if len(req.Inputs) > 0 {
		in, _ := json.MarshalIndent(req.Inputs, "", "  ")
		b.WriteString("\nInputs:\n```json\n" + string(in) + "\n```\n")
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
