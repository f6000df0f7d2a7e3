package mcp

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// planHooks and unplanHooks on settings files of every shape: the entries
// are added once, a moved binary's entries are updated, other entries are
// kept, and what is not an object of arrays is refused untouched.
func TestPlanHooks(t *testing.T) {
	ours := func(cmd string) string {
		return `{"matcher": "", "hooks": [{"type": "command", "command": "` + cmd + `"}]}`
	}
	cases := []struct {
		name, old  string
		action     string
		err        string
		afterUnset string // the file after unplanHooks of the planned content ("" = removed)
	}{
		{name: "absent", action: ActionCreated},
		{name: "blank", old: "\n", action: ActionUpdated},
		{name: "null hooks", old: `{"hooks": null}`, action: ActionUpdated},
		{name: "null event", old: `{"hooks": {"Stop": null, "x": []}}`, action: ActionUpdated, afterUnset: `{"hooks": {"x": []}}`},
		{name: "already there", old: `{"hooks": {"SessionStart": [` + ours("/opt/bin/stratum hook session-start") + `], "Stop": [` + ours("/opt/bin/stratum hook session-stop") + `], "PostToolUseFailure": [` + ours("/opt/bin/stratum hook post-tool-failure") + `]}}`, action: ActionUnchanged},
		{name: "binary moved", old: `{"hooks": {"SessionStart": [` + ours("/old/stratum hook session-start") + `]}}`, action: ActionUpdated},
		{name: "not json", old: `{`, err: "not valid JSON"},
		{name: "not an object", old: `[]`, err: "not a JSON object"},
		{name: "hooks not an object", old: `{"hooks": []}`, err: "hooks is not an object"},
		{name: "event not an array", old: `{"hooks": {"Stop": {}}}`, err: "hooks.Stop is not an array"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), ".claude", "settings.json")
			if c.old != "" {
				writeFile(t, path, c.old)
			}
			f, err := planHooks(path, "/opt/bin/stratum")
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.Action != c.action {
				t.Errorf("action %s, want %s", f.Action, c.action)
			}
			var doc struct {
				Hooks map[string][]any `json:"hooks"`
			}
			if err := json.Unmarshal([]byte(f.Content), &doc); err != nil {
				t.Fatalf("planned content is not JSON: %v\n%s", err, f.Content)
			}
			for _, h := range hookEvents {
				n := 0
				for _, e := range doc.Hooks[h.event] {
					if cmd, ok := ourHook(e, h.name); ok {
						n++
						if cmd != "/opt/bin/stratum hook "+h.name {
							t.Errorf("%s runs %q", h.event, cmd)
						}
					}
				}
				if n != 1 {
					t.Errorf("%s: %d stratum entries, want 1:\n%s", h.event, n, f.Content)
				}
			}
			writeFile(t, path, f.Content)
			u, err := unplanHooks(path)
			if err != nil {
				t.Fatal(err)
			}
			if u.Content != c.afterUnset {
				t.Errorf("after uninstall %q, want %q", u.Content, c.afterUnset)
			}
		})
	}
}

// A path with a space or a quote is quoted for the shell Claude Code runs
// the hook's command with.
func TestHookCommandQuoting(t *testing.T) {
	for in, want := range map[string]string{
		"/opt/bin/stratum":      "/opt/bin/stratum hook stop",
		"/Users/a b/stratum":    "'/Users/a b/stratum' hook stop",
		"/tmp/it's/stratum":     `'/tmp/it'\''s/stratum' hook stop`,
		"C:/x/stratum.exe":      "C:/x/stratum.exe hook stop",
		"/opt/$(touch x)/s":     "'/opt/$(touch x)/s' hook stop",
		"stratum":               "stratum hook stop",
		"/a;rm -rf ~/stratum":   "'/a;rm -rf ~/stratum' hook stop",
		"/opt/bin/stratum-v1.2": "/opt/bin/stratum-v1.2 hook stop",
	} {
		if got := hookCommand(in, "stop"); got != want {
			t.Errorf("hookCommand(%q) = %q, want %q", in, got, want)
		}
	}
}

// The hooks keep the memory file as the original's do: session-start
// prints it, session-stop and post-tool-failure append dated notes (cut to
// 400 and 300 characters), an interrupt or a missing file records nothing,
// and a hook never creates the file.
func TestRunHook(t *testing.T) {
	now := time.Date(2026, 12, 4, 23, 59, 0, 0, time.FixedZone("x", 3600))
	dir := t.TempDir()
	memory := filepath.Join(dir, ".claude", "memory", "MEMORY.md")
	in := func(v map[string]any) *bytes.Reader {
		v["cwd"] = dir
		b, _ := json.Marshal(v)
		return bytes.NewReader(b)
	}
	var out bytes.Buffer
	// No memory file: nothing printed, nothing created.
	for _, name := range HookNames() {
		if err := RunHook(name, in(map[string]any{"last_assistant_message": "m", "error": "e"}), &out, now); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if _, err := os.Stat(memory); !os.IsNotExist(err) || out.Len() != 0 {
		t.Fatalf("without a memory file: stat %v, output %q", err, out.String())
	}
	writeFile(t, memory, "# Memory\n")
	long := strings.Repeat("é", 500)
	steps := []struct {
		name  string
		input map[string]any
	}{
		{HookSessionStop, map[string]any{"last_assistant_message": long}},
		{HookSessionStop, map[string]any{"last_assistant_message": ""}},
		{HookPostToolFailure, map[string]any{"tool_name": "Bash", "error": "exit 1"}},
		{HookPostToolFailure, map[string]any{"tool_name": "Bash", "error": "x", "is_interrupt": true}},
		{HookPostToolFailure, map[string]any{"error": long}},
	}
	for _, s := range steps {
		if err := RunHook(s.name, in(s.input), &out, now); err != nil {
			t.Fatal(err)
		}
	}
	want := "# Memory\n" +
		"\n## Session note 2026-12-04T22:59:00Z\n\n" + strings.Repeat("é", 400) + "\n" +
		"\n## Tool failure 2026-12-04T22:59:00Z\n\nTool: Bash\nError: exit 1\n" +
		"\n## Tool failure 2026-12-04T22:59:00Z\n\nTool: unknown\nError: " + strings.Repeat("é", 300) + "\n"
	if got := readFile(t, memory); got != want {
		t.Errorf("memory file:\n%s\nwant:\n%s", got, want)
	}
	if err := RunHook(HookSessionStart, in(map[string]any{}), &out, now); err != nil || out.String() != want {
		t.Errorf("session-start printed %q (%v)", out.String(), err)
	}
	if err := RunHook("nope", strings.NewReader("{}"), &out, now); err == nil || !strings.Contains(err.Error(), "session-start") {
		t.Errorf("unknown hook: %v", err)
	}
	if err := RunHook(HookSessionStop, strings.NewReader("not json"), &out, now); err == nil || !strings.Contains(err.Error(), "not the JSON") {
		t.Errorf("bad stdin: %v", err)
	}
}
