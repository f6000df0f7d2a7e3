package run

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/config"
	"github.com/stratum-go/stratum/engine/guard"
	"github.com/stratum-go/stratum/engine/internal/judge"
)

// DefaultJudgeAgents are the agent commands of a judge step's verifiers:
// "judge" answers tier 2 and, unless "judge-adversary" is configured, tier
// 3. The default is Claude Code with read-only tools (Read, Grep, Glob) and
// every writing or executing tool refused; the verifier's working
// directory is a read-only copy of the staged turn. Configure either name
// under agents: to use another CLI (a container, for instance: the prompt
// is on stdin, {dir} is the copy).
var DefaultJudgeAgents = map[string]config.Command{
	"judge": {Argv: []string{"claude", "-p", "--output-format", "text",
		"--allowedTools", "Read,Grep,Glob", "--disallowedTools", "Edit,Write,NotebookEdit,Task,Bash"}},
}

// judgeTimeout bounds one verifier answer.
const judgeTimeout = 15 * time.Minute

// AgentVerifier answers a judge's tiers 2 and 3 through an agent CLI.
type AgentVerifier struct {
	// Agents are the configured agents (config.Config.Agents); "judge" and
	// "judge-adversary" among them replace DefaultJudgeAgents.
	Agents map[string]config.Command
	// MaxOutput caps the CLI's stdout (default DefaultMaxOutput).
	MaxOutput int
}

var _ judge.Verifier = (*AgentVerifier)(nil)

// Verify runs the verifier's command in req.Dir with the prompt on stdin
// and answers its stdout.
func (v *AgentVerifier) Verify(ctx context.Context, req judge.VerifyRequest) (judge.Answer, error) {
	name := "judge"
	if req.Tier == judge.TierT3 {
		if _, ok := v.Agents["judge-adversary"]; ok {
			name = "judge-adversary"
		}
	}
	ac, ok := v.Agents[name]
	if !ok {
		ac = DefaultJudgeAgents["judge"]
	}
	vals := map[string]string{"dir": req.Dir, "prompt_file": ""}
	repl := strings.NewReplacer("{dir}", req.Dir)
	p := process{
		name:         "judge verifier " + name,
		dir:          req.Dir,
		env:          append(os.Environ(), "STRATUM_JUDGE_TIER="+req.Tier, "STRATUM_JUDGE_PREDICATE="+req.Predicate),
		stdin:        strings.NewReader(req.Prompt),
		maxOut:       v.MaxOutput,
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
	ctx, cancel := context.WithTimeout(ctx, judgeTimeout)
	defer cancel()
	out, _, err := p.run(ctx)
	if err != nil {
		return judge.Answer{}, fmt.Errorf("%s: %w", p.name, err)
	}
	agent := "claude" // the default command
	if _, ok := v.Agents[name]; ok {
		agent = name
	}
	return judge.Answer{Text: string(out), Agent: agent}, nil
}

// JudgeVerifier is the verifier of the judge steps of a project: the
// agents of its configuration (config.Load(projectDir)).
func JudgeVerifier(projectDir string) (*AgentVerifier, error) {
	cfg, err := config.Load(projectDir)
	if err != nil {
		return nil, err
	}
	return &AgentVerifier{Agents: cfg.Agents}, nil
}

// JudgeRoot is where judge turns are staged: $STRATUM_HOME/judge.
func JudgeRoot() (string, error) {
	home, err := config.Home()
	if err != nil {
		return "", err
	}
	return home + string(os.PathSeparator) + "judge", nil
}

// GuardJudge is the judge of guarded transitions' verifier-tier predicates:
// turns staged under JudgeRoot, the verifier of the workspace's
// configuration (JudgeVerifier). Nil when there is no stratum home.
func GuardJudge() *guard.Judge {
	root, err := JudgeRoot()
	if err != nil {
		return nil
	}
	return &guard.Judge{Root: root, Verifier: func(ws string) (judge.Verifier, error) {
		if ws == "" {
			ws = "."
		}
		return JudgeVerifier(ws)
	}}
}
