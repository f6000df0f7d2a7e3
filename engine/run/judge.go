package run

import (
	"context"
	"encoding/json"
	"errors"
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

// JudgeExecutor runs judge steps in-process (`stratum run`): the step's
// resolved inputs are its evidence — each one an artifact (a string as
// it is, anything else as JSON), except an input named modified_files (a
// list of paths relative to the spec's directory), the modified files —,
// the judge decides them (engine/JUDGE.md), Record records the turn in
// the flow, and the JudgeResult is the step's result, checked by its
// ensure like any result.
type JudgeExecutor struct {
	// Verifier answers tiers 2 and 3 (nil: an AgentVerifier over
	// DefaultJudgeAgents).
	Verifier judge.Verifier
	// Root is where turns are staged ("": JudgeRoot()).
	Root string
	// Record records a turn in the flow (nil: not recorded).
	Record func(ctx context.Context, t engine.JudgeTurn) error
}

// Execute runs one judge turn.
func (j *JudgeExecutor) Execute(ctx context.Context, req engine.StepRequest) (engine.StepOutcome, error) {
	step := req.Step
	if step == nil || step.Judge == nil {
		return engine.StepOutcome{}, &engine.AttemptError{Kind: engine.AttemptConfig, Violations: []string{"not a judge step"}}
	}
	root := j.Root
	if root == "" {
		r, err := JudgeRoot()
		if err != nil {
			return engine.StepOutcome{}, err
		}
		root = r
	}
	v := j.Verifier
	if v == nil {
		v = &AgentVerifier{}
	}
	arts, modified := judgeEvidence(req.Inputs)
	res, err := judge.Run(ctx, judge.Request{
		FlowID: req.FlowID, StepID: step.ID, Predicates: step.Judge.Predicates, Stakes: step.Judge.Stakes,
		Budget: step.Judge.Budget, Artifacts: arts, Modified: modified, Workspace: req.Dir, Root: root, Verifier: v,
	})
	var je *judge.Error
	if errors.As(err, &je) {
		kind := engine.AttemptContract
		if je.Type == judge.ErrVerifier || je.Type == judge.ErrStaging {
			kind = engine.AttemptConfig
		}
		return engine.StepOutcome{}, &engine.AttemptError{Kind: kind, Violations: append([]string{je.Type + ": " + je.Message}, je.Violations...)}
	}
	if err != nil {
		return engine.StepOutcome{}, err
	}
	if j.Record != nil {
		if err := j.Record(ctx, engine.JudgeTurn{FlowID: req.FlowID, StepID: step.ID, History: res.Entries(), Outcome: res.Outcome(), Verdict: res.Verdict()}); err != nil {
			return engine.StepOutcome{}, err
		}
	}
	b, err := json.Marshal(res)
	if err != nil {
		return engine.StepOutcome{}, err
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return engine.StepOutcome{}, err
	}
	return engine.StepOutcome{Output: out}, nil
}

// judgeEvidence splits a judge step's inputs into artifacts and modified
// files.
func judgeEvidence(inputs map[string]any) (map[string]string, []string) {
	arts := map[string]string{}
	var modified []string
	for k, v := range inputs {
		if list, ok := v.([]any); ok && k == "modified_files" {
			for _, p := range list {
				if s, ok := p.(string); ok {
					modified = append(modified, s)
				}
			}
			continue
		}
		if s, ok := v.(string); ok {
			arts[k] = s
			continue
		}
		b, _ := json.Marshal(v)
		arts[k] = string(b)
	}
	return arts, modified
}
