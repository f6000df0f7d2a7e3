package run

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/engine/config"
	"github.com/stratum-go/stratum/engine/state"
)

// pipeSpec is a pipeline step over $.input.items whose stages run cmd
// (a run: command: it gets the stage's prompt on stdin).
func pipeSpec(step, stages, cmd string) string {
	return `version: "0.3"
flows:
  main:
    input: {items: {type: array}}
    steps:
      - id: pipe
        type: pipeline
        source: "$.input.items"
        isolation: none
` + step + `        stages:
` + stages + `        run: |
` + indent(cmd, "          ")
}

func indent(s, pre string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString(pre + l + "\n")
	}
	return b.String()
}

// promptCmd answers a stage's prompt as its result (a JSON string),
// sleeping for the tasks named in $SLOW.
const promptCmd = `p=$(sed -n 's/.*"prompt":"\([^"]*\)".*/\1/p')
case " $SLOW " in *" $STRATUM_TASK_ID "*) sleep 2;; esac
printf '"%s"\n' "$p"`

func items(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = fmt.Sprintf("f%d", i)
	}
	return out
}

// The barrier-free promise: 6 items through 3 stages where one item's
// second stage is slow; every other item reaches its third stage before
// the slow one ends its second (by the recorded timestamps), and each
// stage's prompt carries the previous stage's result ({prev}).
func TestPipelineNoBarrierBetweenStages(t *testing.T) {
	e := newEnv(t)
	t.Setenv("SLOW", "pipe::item1::stage1")
	sp := e.spec(pipeSpec("        max_concurrent: 6\n", `          - {intent_template: "a:{item}"}
          - {intent_template: "b:{prev}"}
          - {intent_template: "c:{prev}"}
`, promptCmd))
	o := e.start(sp, "main", map[string]any{"items": items(6)})
	wantStatus(t, o, EndComplete, 0)
	st := e.state(o.FlowID)
	tasks := st.LastTasksOf("pipe")
	slow := tasks["pipe::item1::stage1"]
	if slow.FinishedAt == nil {
		t.Fatalf("slow task: %+v", slow)
	}
	for i := 0; i < 6; i++ {
		if i == 1 {
			continue
		}
		third := tasks[fmt.Sprintf("pipe::item%d::stage2", i)]
		if third.StartedAt == nil || *third.StartedAt >= *slow.FinishedAt {
			t.Errorf("item %d started stage 3 at %v, not before the slow item ended stage 2 (%v): a barrier between stages", i, third.StartedAt, *slow.FinishedAt)
		}
	}
	out := st.StepOutputs["pipe"].(map[string]any)
	its := out["items"].([]any)
	if len(its) != 6 || out["require_satisfied"] != true {
		t.Fatalf("aggregate: %v", out)
	}
	for i, it := range its {
		m := it.(map[string]any)
		want := fmt.Sprintf("c:b:a:f%d", i)
		if m["status"] != "complete" || m["result"] != want || len(m["stages"].([]any)) != 3 {
			t.Errorf("item %d: %v, want result %q", i, m, want)
		}
	}
}

// when skips a stage (its result passes through), exit_when ends an
// item's chain (its later stages skipped), each item on its own.
func TestPipelineWhenExitWhen(t *testing.T) {
	e := newEnv(t)
	sp := e.spec(pipeSpec("", `          - {intent_template: "a:{item}", exit_when: "result == 'a:stop'"}
          - {intent_template: "b:{prev}", when: "item != 'skip'"}
          - {intent_template: "c:{prev}"}
`, promptCmd))
	o := e.start(sp, "main", map[string]any{"items": []any{"go", "skip", "stop"}})
	wantStatus(t, o, EndComplete, 0)
	st := e.state(o.FlowID)
	tasks := st.LastTasksOf("pipe")
	for id, want := range map[string]string{
		"pipe::item0::stage1": state.TaskComplete, "pipe::item1::stage1": state.TaskSkipped, "pipe::item1::stage2": state.TaskComplete,
		"pipe::item2::stage0": state.TaskComplete, "pipe::item2::stage1": state.TaskSkipped, "pipe::item2::stage2": state.TaskSkipped,
	} {
		if got := tasks[id].State; got != want {
			t.Errorf("%s: %s, want %s", id, got, want)
		}
	}
	its := st.StepOutputs["pipe"].(map[string]any)["items"].([]any)
	for i, want := range []string{"c:b:a:go", "c:a:skip", "a:stop"} {
		if m := its[i].(map[string]any); m["status"] != "complete" || m["result"] != want {
			t.Errorf("item %d: %v, want %q", i, m, want)
		}
	}
}

// A failing stage ends its own item only (its later stages cancelled, its
// siblings go on); require counts the items whose chain completed.
func TestPipelineFailureIsolatedRequire(t *testing.T) {
	cmd := `p=$(sed -n 's/.*"prompt":"\([^"]*\)".*/\1/p')
case "$p" in b:a:bad) echo "bad item" >&2; exit 1;; esac
printf '"%s"\n' "$p"`
	stages := `          - {intent_template: "a:{item}"}
          - {intent_template: "b:{prev}"}
          - {intent_template: "c:{prev}"}
`
	for _, c := range []struct {
		require string
		status  string
	}{
		{"any", EndComplete}, {"2", EndComplete}, {"3", EndFailed}, {"all", EndFailed},
	} {
		t.Run(c.require, func(t *testing.T) {
			e := newEnv(t)
			sp := e.spec(pipeSpec("        require: "+c.require+"\n        retries: 1\n", stages, cmd))
			o := e.start(sp, "main", map[string]any{"items": []any{"x", "bad", "y"}})
			if o.Status != c.status {
				t.Fatalf("require %s: %s (%s), want %s", c.require, o.Status, o.Message, c.status)
			}
			tasks := e.state(o.FlowID).LastTasksOf("pipe")
			if got := tasks["pipe::item1::stage1"].State; got != state.TaskFailed {
				t.Errorf("the failing stage: %s", got)
			}
			if got := tasks["pipe::item1::stage2"].State; got != state.TaskCancelled {
				t.Errorf("the failed item's next stage: %s, want cancelled", got)
			}
			if c.status == EndFailed {
				return // the siblings may have been cancelled: require can no longer be met
			}
			for _, id := range []string{"pipe::item0::stage2", "pipe::item2::stage2"} {
				if got := tasks[id].State; got != state.TaskComplete {
					t.Errorf("%s: %s, want complete (siblings go on)", id, got)
				}
			}
		})
	}
}

// A fanout stage's list runs its lanes (at most max, the others skipped),
// the join gets the lanes' results ({prevs}) and the item's source
// ({source}); the fanout's require decides whether the join runs.
func TestPipelineFanoutJoin(t *testing.T) {
	cmd := `in=$(cat)
p=$(printf '%s' "$in" | sed -n 's/.*"prompt":"\(.*\)","task".*/\1/p')
case "$STRATUM_TASK_ID" in
  *::stage0) printf '["s1","s2","s3"]\n' ;;
  *::stage1::lane1) [ -n "$FAIL_LANE" ] && exit 1; printf '"%s"\n' "$p" ;;
  *::stage2) printf '%s' "$in" > "$JOIN_OUT"; printf '"joined"\n' ;;
  *) printf '"%s"\n' "$p" ;;
esac`
	stages := `          - {intent_template: "split {item}", fanout: {max: 4, require: REQ}}
          - {intent_template: "sum {item} of {source}"}
          - {intent_template: "joined:{prevs}", join: true}
`
	for _, c := range []struct {
		name, require, failLane string
		status                  string
		joined                  string
	}{
		{"all-lanes", "all", "", EndComplete, `joined:["sum s1 of d","sum s2 of d","sum s3 of d"]`},
		{"any-survivors", "any", "1", EndComplete, `joined:["sum s1 of d","sum s3 of d"]`},
		{"all-one-lane-failed", "all", "1", EndFailed, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			t.Setenv("FAIL_LANE", c.failLane)
			joinOut := filepath.Join(t.TempDir(), "join.json")
			t.Setenv("JOIN_OUT", joinOut)
			sp := e.spec(pipeSpec("        retries: 1\n", strings.Replace(stages, "REQ", c.require, 1), cmd))
			o := e.start(sp, "main", map[string]any{"items": []any{"d"}})
			tasks := e.state(o.FlowID).LastTasksOf("pipe")
			if o.Status != c.status {
				t.Fatalf("%s (%s), want %s; tasks %+v", o.Status, o.Message, c.status, tasks)
			}
			if got := tasks["pipe::item0::stage1::lane3"].State; got != state.TaskSkipped {
				t.Errorf("unfilled lane: %s, want skipped", got)
			}
			join := tasks["pipe::item0::stage2"]
			if c.status == EndFailed {
				if join.State != state.TaskCancelled {
					t.Errorf("join: %s, want cancelled (lane require not met)", join.State)
				}
				return
			}
			var in struct{ Prompt string }
			raw, _ := os.ReadFile(joinOut)
			if err := json.Unmarshal(raw, &in); err != nil || join.State != state.TaskComplete || in.Prompt != c.joined {
				t.Errorf("join: %s, prompt %q (%v), want %q", join.State, in.Prompt, err, c.joined)
			}
		})
	}
}

// A stage task's prompt carries its certificate's instructions (the
// stage's own whatever its agent, the step's on claude stages only) and
// its result is checked when it ends: an item whose stage misses a
// section fails there, its later stages never run, its siblings go on.
func TestPipelineStageCertificateInstructions(t *testing.T) {
	cmd := `in=$(cat)
printf '%s' "$in" > "$PROMPTS/$STRATUM_TASK_ID"
case "$in" in
  *a:bad*) printf '{"artifact": "nothing"}\n' ;;
  *) printf '{"artifact": "## Stage0 ## Step"}\n' ;;
esac`
	step := "        require: any\n        task_reasoning_template: {sections: [{id: s, label: Step, description: from the step}]}\n"
	stages := `          - {intent_template: "a:{item}", task_reasoning_template: {sections: [{id: s0, label: Stage0, description: the first}]}}
          - {agent: codex, intent_template: "b:{item}"}
          - {intent_template: "c:{item}"}
`
	e := newEnv(t)
	dir := t.TempDir()
	t.Setenv("PROMPTS", dir)
	sp := e.spec(pipeSpec(step, stages, cmd))
	o := e.start(sp, "main", map[string]any{"items": []any{"ok", "bad"}})
	wantStatus(t, o, EndComplete, 0)
	prompt := func(id string) (string, bool) {
		raw, err := os.ReadFile(filepath.Join(dir, id))
		if err != nil {
			return "", false
		}
		var in struct{ Prompt string }
		if err := json.Unmarshal(raw, &in); err != nil {
			t.Fatalf("%s: %v: %s", id, err, raw)
		}
		return in.Prompt, true
	}
	const must = "You MUST structure your response with these sections:"
	for _, c := range []struct {
		id, start string
		has, not  []string
	}{
		{"pipe::item0::stage0", "a:ok", []string{must, "\n## Stage0\nthe first\n"}, []string{"## Step"}},
		{"pipe::item0::stage1", "b:ok", nil, []string{must}},
		{"pipe::item0::stage2", "c:ok", []string{must, "\n## Step\nfrom the step\n"}, []string{"## Stage0"}},
	} {
		p, ok := prompt(c.id)
		if !ok || !strings.HasPrefix(p, c.start) {
			t.Errorf("%s: prompt %q, want it to start with %q", c.id, p, c.start)
		}
		for _, s := range c.has {
			if !strings.Contains(p, s) {
				t.Errorf("%s: prompt %q lacks %q", c.id, p, s)
			}
		}
		for _, s := range c.not {
			if strings.Contains(p, s) {
				t.Errorf("%s: prompt %q has %q", c.id, p, s)
			}
		}
	}
	tasks := e.state(o.FlowID).LastTasksOf("pipe")
	bad := tasks["pipe::item1::stage0"]
	if bad.State != state.TaskFailed || strings.Join(bad.CertViolations, "; ") != "certificate missing section: Stage0" {
		t.Errorf("the item missing its certificate: %s %v", bad.State, bad.CertViolations)
	}
	for _, id := range []string{"pipe::item1::stage1", "pipe::item1::stage2"} {
		if _, ran := prompt(id); ran || tasks[id].State == state.TaskComplete {
			t.Errorf("%s ran after its item's certificate failed (%s)", id, tasks[id].State)
		}
	}
	if got := tasks["pipe::item0::stage2"].State; got != state.TaskComplete {
		t.Errorf("sibling's last stage: %s, want complete", got)
	}
}

// A worktree pipeline run by fake agent CLIs, one per stage's agent (the
// original's test_per_stage_agent_routing): each stage goes to its own
// agent with its prompt ({prev} the previous stage's answer, the claude
// stage's certificate instructions), each stage's worktree goes on from
// its item's previous stage, and every item's chain is merged.
func TestPipelineFakeAgentCLIs(t *testing.T) {
	e := gitEnv(t)
	bin, prompts := t.TempDir(), t.TempDir()
	// A fake agent saves its prompt, writes its line into its item's file
	// and answers with a JSON block (the claude one with the
	// certificate's sections).
	fake := func(name, answer string) {
		script := `#!/bin/sh
cat > "` + prompts + `/` + name + `-$STRATUM_TASK_ID"
item=${STRATUM_TASK_ID#pipe::}; item=${item%%::*}
echo "` + name + ` ${STRATUM_TASK_ID##*::}" >> "$item.txt"
printf 'Done.\n` + "```json" + `\n%s\n` + "```" + `\n' '` + answer + `'
`
		if err := os.WriteFile(filepath.Join(bin, "fake-"+name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fake("claude", `{"artifact": "## Premises [P1] ## Trace ## Conclusion [P1]", "summary": "cleaned"}`)
	fake("codex", `{"verdict": "PASS"}`)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	sp := e.spec(`version: "0.3"
flows:
  main:
    input: {items: {type: array}}
    steps:
      - id: pipe
        type: pipeline
        source: "$.input.items"
        isolation: worktree
        stages:
          - {agent: claude, intent_template: "clean {item}", task_reasoning_template: {}}
          - {agent: codex, intent_template: "verify {item}: {prev}"}
`)
	e.commit()
	o := e.start(sp, "main", map[string]any{"items": []any{"a", "b"}}, func(o *Options) {
		o.Agent = &AgentExecutor{Agents: map[string]config.Command{"claude": {Argv: []string{"fake-claude"}}, "codex": {Argv: []string{"fake-codex"}}}}
	})
	wantStatus(t, o, EndComplete, 0)
	for i, item := range []string{"a", "b"} {
		stage := func(agent string, j int) string {
			b, err := os.ReadFile(filepath.Join(prompts, fmt.Sprintf("%s-pipe::item%d::stage%d", agent, i, j)))
			if err != nil {
				t.Errorf("item %s stage %d did not go to %s: %v", item, j, agent, err)
			}
			return string(b)
		}
		if p := stage("claude", 0); !strings.HasPrefix(p, "clean "+item) || !strings.Contains(p, "You MUST structure your response") {
			t.Errorf("claude's prompt for %s: %q", item, p)
		}
		if p := stage("codex", 1); !strings.HasPrefix(p, "verify "+item+": ") || !strings.Contains(p, `"summary":"cleaned"`) {
			t.Errorf("codex's prompt for %s ({prev}): %q", item, p)
		}
		b, err := os.ReadFile(filepath.Join(e.dir, fmt.Sprintf("item%d.txt", i)))
		if err != nil || string(b) != "claude stage0\ncodex stage1\n" {
			t.Errorf("item %s merged: %q %v", item, b, err)
		}
	}
}

// The merge queue on a worktree pipeline: pre_merge_verify runs in each
// stage's worktree; a stage that fails it bounces (its item fails, nothing
// of it merged), and the step's retry tells that stage why in its prompt.
func TestPipelinePreMergeGate(t *testing.T) {
	e := gitEnv(t)
	sp := e.spec(`version: "0.3"
flows:
  main:
    input: {items: {type: array}}
    steps:
      - id: pipe
        type: pipeline
        source: "$.input.items"
        isolation: worktree
        retries: 2
        pre_merge_verify: ["! grep -rq draft --include='*.txt' ."]
        stages:
          - {intent_template: "start {item}"}
          - {intent_template: "finish {item}"}
        run: |
          in=$(cat)
          item=${STRATUM_TASK_ID#pipe::}; item=${item%%::*}
          case "$STRATUM_TASK_ID:$in" in
            *::stage0:*) echo s0 >> "$item.txt" ;;
            pipe::item1::stage1:*"rejected before merge"*) echo fixed >> "$item.txt"; printf '%s' "$in" > ../bounced.prompt ;;
            pipe::item1::stage1:*) echo draft >> "$item.txt" ;;
            *) echo done >> "$item.txt" ;;
          esac
          echo '{}'
`)
	e.commit()
	wtRoot := t.TempDir()
	o := e.start(sp, "main", map[string]any{"items": []any{"a", "b"}}, func(o *Options) { o.WorktreeRoot = wtRoot })
	wantStatus(t, o, EndComplete, 0)
	for item, want := range map[string]string{"item0": "s0\ndone\n", "item1": "s0\nfixed\n"} {
		if b, err := os.ReadFile(filepath.Join(e.dir, item+".txt")); err != nil || string(b) != want {
			t.Errorf("%s.txt merged: %q %v, want %q", item, b, err, want)
		}
	}
	matches, _ := filepath.Glob(filepath.Join(wtRoot, o.FlowID, "pipe", "bounced.prompt"))
	if len(matches) != 1 {
		t.Fatal("the bounced stage's retry did not run with its bounce")
	}
	raw, _ := os.ReadFile(matches[0])
	var in struct{ Prompt string }
	if err := json.Unmarshal(raw, &in); err != nil || !strings.HasPrefix(in.Prompt, "finish b\n\n## Previous attempt was rejected before merge") ||
		!strings.Contains(in.Prompt, "FAILED the pre-merge gate `! grep -rq draft --include='*.txt' .` (exit 1)") || !strings.Contains(in.Prompt, "Files involved: item1.txt") {
		t.Errorf("the retried stage's prompt: %q (%v)", in.Prompt, err)
	}
}

// A stage's task_timeout bounds that stage's tasks (the original's
// test_per_stage_timeout_fires): the slow item's stage fails with the
// stage's timeout, its sibling goes through both stages.
func TestPipelineStageTimeout(t *testing.T) {
	e := newEnv(t)
	cmd := `in=$(cat)
case "$in" in *'"prompt":"a:slow"'*) sleep 5;; esac
printf '"ok"\n'`
	sp := e.spec(pipeSpec("        require: any\n        task_timeout: 60\n", `          - {intent_template: "a:{item}", task_timeout: 1}
          - {intent_template: "b:{prev}"}
`, cmd))
	o := e.start(sp, "main", map[string]any{"items": []any{"slow", "quick"}})
	wantStatus(t, o, EndComplete, 0)
	tasks := e.state(o.FlowID).LastTasksOf("pipe")
	slow := tasks["pipe::item0::stage0"]
	if slow.State != state.TaskFailed || slow.Error == nil || !strings.Contains(*slow.Error, "timeout after 1s (task_timeout)") {
		t.Errorf("the slow stage: %s %v", slow.State, slow.Violations)
	}
	for _, id := range []string{"pipe::item1::stage0", "pipe::item1::stage1"} {
		if got := tasks[id].State; got != state.TaskComplete {
			t.Errorf("%s: %s, want complete", id, got)
		}
	}
}
