package mcp

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"gopkg.in/yaml.v3"

	"github.com/stratum-go/stratum/specs"
	"github.com/stratum-go/stratum/specs/exprlang"
)

var (
	skillNameRe = regexp.MustCompile(`^[a-z0-9-]{1,64}$`)
	toolRefRe   = regexp.MustCompile("`(stratum_[a-z_]+)`")
	yamlBlockRe = regexp.MustCompile("(?s)```yaml\n(.*?)```")
)

// Each skill is a Claude Code skill (front matter name = directory name,
// a description of what and when), every spec it shows validates, and every
// tool it names exists.
func TestSkillsAreValid(t *testing.T) {
	tools := toolNames(t)
	skills := embeddedSkills()
	for _, want := range []string{"stratum-feature", "stratum-review", "stratum-spec", "stratum-resume",
		"stratum-debug", "stratum-refactor", "stratum-migrate", "stratum-test", "stratum-onboard"} {
		found := false
		for _, s := range skills {
			found = found || s.name == want
		}
		if !found {
			t.Errorf("missing skill %s", want)
		}
	}
	for _, s := range skills {
		t.Run(s.name, func(t *testing.T) {
			rest, ok := strings.CutPrefix(s.content, "---\n")
			front, body, ok2 := strings.Cut(rest, "\n---\n")
			if !ok || !ok2 {
				t.Fatal("no YAML front matter")
			}
			var fm struct {
				Name        string `yaml:"name"`
				Description string `yaml:"description"`
			}
			if err := yaml.Unmarshal([]byte(front), &fm); err != nil {
				t.Fatalf("front matter: %v", err)
			}
			if fm.Name != s.name || !skillNameRe.MatchString(fm.Name) {
				t.Errorf("name %q (directory %s)", fm.Name, s.name)
			}
			if n := len(fm.Description); n < 40 || n > 1024 || !strings.Contains(fm.Description, "Use ") {
				t.Errorf("description (%d bytes) should say what the skill does and when to use it: %q", n, fm.Description)
			}
			checkToolRefs(t, body, tools)
			specsShown := yamlBlockRe.FindAllStringSubmatch(body, -1)
			if s.name != "stratum-resume" && len(specsShown) == 0 {
				t.Error("shows no spec")
			}
			for _, m := range specsShown {
				if _, ds := specs.Parse(s.name+".stratum.yaml", []byte(m[1]), exprlang.Compile); ds.HasErrors() {
					t.Errorf("its spec does not validate:\n%s", ds)
				}
			}
		})
	}
}

// The CLAUDE.md block names our tools, revise_feedback and the TUI.
func TestBlockContent(t *testing.T) {
	b := blockText()
	checkToolRefs(t, b, toolNames(t))
	for _, want := range []string{"stratum_wait_gate", "revise_feedback", "`gate`, `round`", "`rationale`", "`reviewer`", "`channel`",
		"stratum tui", "stratum_validate", "stratum_plan", "stratum_step_done", "stratum_audit", "approver: human",
		"stratum_flow_run_bg", "paused_gate"} {
		if !strings.Contains(b, want) {
			t.Errorf("block lacks %q", want)
		}
	}
	if !strings.HasPrefix(b, blockBeginPrefix) || !strings.HasSuffix(b, blockEnd) {
		t.Error("block without its markers")
	}
}

func checkToolRefs(t *testing.T, text string, tools map[string]bool) {
	t.Helper()
	for _, m := range toolRefRe.FindAllStringSubmatch(text, -1) {
		if !tools[m[1]] {
			t.Errorf("names %s, which is not a tool of the server", m[1])
		}
	}
}

// toolNames lists the server's tools over an in-memory connection.
func toolNames(t *testing.T) map[string]bool {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	srv := NewServer(nil, Options{})
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tl := range res.Tools {
		names[tl.Name] = true
	}
	return names
}
