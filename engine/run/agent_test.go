package run

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/config"
)

func TestAgentExecutorFromConfig(t *testing.T) {
	e := newEnv(t)
	home := os.Getenv("STRATUM_HOME")
	// The fake agent saves each prompt, fails its first answer's ensure and
	// answers in prose with a fenced JSON block.
	cfg := `agents:
  fake:
    shell: "cat > prompt.$STRATUM_STEP_ID.$(ls prompt.* 2>/dev/null | wc -l | tr -d ' ').md; n=$(ls prompt.* | wc -l | tr -d ' '); printf 'I did it.\n` + "```json" + `\n{\"files\": %s}\n` + "```" + `\n' $n"
  broken: [sh, -c, "echo no json here"]
`
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	sp := e.spec(`version: "0.2"
contracts:
  Out:
    files: {type: integer}
flows:
  main:
    input: {task: {type: string}}
    steps:
      - id: impl
        agent: fake
        intent: "Implement the task"
        inputs: {task: "$.input.task"}
        output_contract: Out
        retries: 2
        ensure: ["result.files >= 2"]
      - id: other
        agent: broken
        intent: "never parses"
        output_contract: Out
`)
	loaded, err := config.Load(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	o := e.start(sp, "main", map[string]any{"task": "add a flag"}, func(o *Options) {
		o.Agent = &AgentExecutor{Agents: Agents(loaded.Agents)}
	})
	wantStatus(t, o, EndFailed, 1)
	if o.Steps[0].Status != "passed" || o.Steps[0].Attempts != 2 {
		t.Fatalf("impl %+v", o.Steps[0])
	}
	if !strings.Contains(strings.Join(o.Steps[1].Violations, ""), "contains no JSON result") {
		t.Fatalf("other %+v", o.Steps[1])
	}
	first, _ := os.ReadFile(filepath.Join(e.dir, "prompt.impl.0.md"))
	second, _ := os.ReadFile(filepath.Join(e.dir, "prompt.impl.1.md"))
	for _, want := range []string{"Implement the task", `"task": "add a flag"`, `"files" (integer)`, "result.files >= 2"} {
		if !strings.Contains(string(first), want) {
			t.Errorf("first prompt lacks %q:\n%s", want, first)
		}
	}
	if strings.Contains(string(first), "Previous attempt failed") {
		t.Errorf("first prompt has violations:\n%s", first)
	}
	if !strings.Contains(string(second), "Previous attempt failed:\n  - ensure 'result.files >= 2' failed\nFix these issues specifically.") {
		t.Errorf("second prompt:\n%s", second)
	}
	st := e.state(o.FlowID)
	if st.BudgetState == nil || st.BudgetState.AgentDispatch != 3 {
		t.Fatalf("ledger %+v", st.BudgetState)
	}
}

func TestAgentUnknownStopsTheRun(t *testing.T) {
	e := newEnv(t)
	sp := e.spec(`version: "0.2"
flows:
  main:
    input: {}
    steps:
      - {id: a, agent: nosuchagent, intent: "x"}
`)
	o := e.start(sp, "main", nil)
	wantStatus(t, o, EndError, 1)
	if !strings.Contains(o.Message, `unknown agent "nosuchagent" (configured: claude, codex)`) {
		t.Fatal(o.Message)
	}
	if st := e.state(o.FlowID); st.Attempts["a"] != 0 {
		t.Fatalf("attempts %v", st.Attempts)
	}
}

func TestAgentsOverDefaults(t *testing.T) {
	a := Agents(map[string]config.Command{"claude": {Argv: []string{"claude", "-p", "--model", "opus"}}, "x": {Shell: "run-x"}})
	if strings.Join(a["claude"].Argv, " ") != "claude -p --model opus" || a["x"].Shell != "run-x" || len(a["codex"].Argv) == 0 {
		t.Fatalf("%+v", a)
	}
	if strings.Join(DefaultAgents["claude"].Argv, " ") != "claude -p --output-format text" {
		t.Fatal("Agents modified the defaults")
	}
}

func TestAgentPromptCarriesReviseFeedback(t *testing.T) {
	e := newEnv(t)
	sp := e.spec(`version: "0.2"
flows:
  main:
    input: {}
    steps:
      - {id: impl, agent: claude, intent: "Implement it"}
`)
	step := sp.Flows["main"].Step("impl")
	req := engine.StepRequest{Spec: sp, Flow: sp.Flows["main"], Step: step, Dispatch: &engine.StepDispatch{StepID: "impl",
		ReviseFeedback: &engine.ReviseFeedback{Gate: "review", Round: 1, Rationale: "the flag is undocumented", Reviewer: "ann", Channel: "tui"}}}
	p := AgentPrompt(req)
	if !strings.Contains(p, "The reviewer sent this back (gate review, round 1, ann via tui): the flag is undocumented") {
		t.Fatalf("prompt lacks the feedback:\n%s", p)
	}
	req.Dispatch.ReviseFeedback = nil
	if strings.Contains(AgentPrompt(req), "sent this back") {
		t.Fatal("feedback section without feedback")
	}
}

// An agent's answer is checked against the step's output contract by the
// checker every driver uses: one that does not fit (a string for an
// integer) is a failed attempt, retried with exactly that violation in the
// next prompt.
func TestAgentAnswerCheckedAgainstContract(t *testing.T) {
	e := newEnv(t)
	home := os.Getenv("STRATUM_HOME")
	cfg := `agents:
  fake:
    shell: "cat > prompt.$(ls prompt.* 2>/dev/null | wc -l | tr -d ' ').md; if [ -e prompt.1.md ]; then echo '{\"files\": 2}'; else echo '{\"files\": \"two\"}'; fi"
`
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	sp := e.spec(`version: "0.2"
contracts:
  Out:
    files: {type: integer}
flows:
  main:
    input: {}
    steps:
      - id: impl
        agent: fake
        intent: "Implement the task"
        output_contract: Out
        retries: 2
`)
	loaded, err := config.Load(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	o := e.start(sp, "main", map[string]any{}, func(o *Options) {
		o.Agent = &AgentExecutor{Agents: Agents(loaded.Agents)}
	})
	wantStatus(t, o, EndComplete, 0)
	if o.Steps[0].Attempts != 2 {
		t.Fatalf("impl %+v, want 2 attempts", o.Steps[0])
	}
	second, _ := os.ReadFile(filepath.Join(e.dir, "prompt.1.md"))
	const v = `output contract 'Out' violation: at '/files': must be of type integer but found string "two"`
	if !strings.Contains(string(second), "Previous attempt failed:\n  - "+v) {
		t.Errorf("the retry's prompt lacks the violation:\n%s", second)
	}
}
