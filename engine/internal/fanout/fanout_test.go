package fanout

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseTasks(t *testing.T) {
	tasks, err := ParseTasks(map[string]any{"tasks": []any{
		map[string]any{"id": "a", "description": "do a", "files_owned": []any{"a.go"}, "depends_on": []string{"b"}},
		map[string]any{"id": "b"},
	}})
	if err != nil || len(tasks) != 2 || tasks[0].Description != "do a" ||
		!slices.Equal(tasks[0].FilesOwned, []string{"a.go"}) || !slices.Equal(tasks[0].DependsOn, []string{"b"}) {
		t.Fatalf("ParseTasks = %+v, %v", tasks, err)
	}
	for _, tc := range []struct {
		source any
		want   string
	}{
		{"plan", `the source is a string ("plan"), not a task list`},
		{[]any{1.0}, "task 0 is a number, not an object with an id"},
		{[]any{map[string]any{"id": " "}}, "task 0 has no id"},
		{[]any{map[string]any{"id": "a", "depends_on": "b"}}, `task 'a': depends_on is a string ("b"), not a list of strings`},
		{[]any{map[string]any{"id": "a", "files_read": []any{true}}}, "task 'a': files_read holds a boolean, not a string"},
	} {
		if _, err := ParseTasks(tc.source); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseTasks(%v) = %v, want %q", tc.source, err, tc.want)
		}
	}
}

func TestGraphViolations(t *testing.T) {
	task := func(id string, deps ...any) any { return map[string]any{"id": id, "depends_on": deps} }
	for _, tc := range []struct {
		name  string
		graph any
		want  []string
	}{
		{"sound", []any{task("a"), task("b", "a")}, nil},
		{"not a list", map[string]any{"tasks": 3.0}, []string{"task graph: the source is a number, not a task list ([{id, description, files_owned, depends_on}, …])"}},
		{"duplicate", []any{task("a"), task("a")}, []string{"task graph: duplicate task id 'a'"}},
		{"self and unknown", []any{task("a", "a", "zz")}, []string{"task graph: task 'a' depends on itself", "task graph: task 'a' depends on unknown task 'zz'"}},
		{"cycle", []any{task("a", "c"), task("b", "a"), task("c", "b")}, []string{"task graph: dependency cycle a → c → b → a"}},
	} {
		if got := GraphViolations(tc.graph); !slices.Equal(got, tc.want) {
			t.Errorf("%s: GraphViolations = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestPrompt(t *testing.T) {
	task := map[string]any{"id": "a", "files": []any{"x.go"}}
	for _, tc := range []struct{ template, want string }{
		{"do {id} on {task.files}", `do a on ["x.go"]`},
		{"no keys", "no keys"},
		{"unknown {missing} kept", "unknown {missing} kept"},
		{"open { only", "open { only"},
	} {
		if got := Prompt(tc.template, task); got != tc.want {
			t.Errorf("Prompt(%q) = %q, want %q", tc.template, got, tc.want)
		}
	}
}

func TestRequire(t *testing.T) {
	for _, tc := range []struct {
		require                  string
		completed, failed, open  int
		satisfied, unsatisfiable bool
	}{
		{"all", 3, 0, 0, true, false},
		{"", 2, 1, 1, false, true},
		{"any", 0, 2, 1, false, false},
		{"any", 1, 2, 0, true, false},
		{" 2 ", 1, 0, 0, false, true},
		{"2", 1, 0, 1, false, false},
		{"2", 2, 5, 0, true, false},
	} {
		if got := RequireSatisfied(tc.require, tc.completed, tc.failed); got != tc.satisfied {
			t.Errorf("RequireSatisfied(%q, %d, %d) = %v", tc.require, tc.completed, tc.failed, got)
		}
		if got := RequireUnsatisfiable(tc.require, tc.completed, tc.failed, tc.open); got != tc.unsatisfiable {
			t.Errorf("RequireUnsatisfiable(%q, %d, %d, %d) = %v", tc.require, tc.completed, tc.failed, tc.open, got)
		}
	}
}

func TestUnixSeconds(t *testing.T) {
	if got := *UnixSeconds(time.Unix(1700000000, 500_000_000)); got != 1700000000.5 {
		t.Fatalf("UnixSeconds = %v", got)
	}
}

func TestRef(t *testing.T) {
	for _, id := range []string{"a", "x", "t00001", "build-api", "v1.2_x"} {
		if got := Ref(id); got != id {
			t.Errorf("Ref(%q) = %q, want the id itself", id, got)
		}
	}
	// Ids that clean to the same text get different refs, each a safe name.
	ids := []string{"x", "-x", "x-", "X", "a/b", "a b", "a\nb", "a..b", "a.lock", "", "é", "../../etc", strings.Repeat("long", 40)}
	seen := map[string]string{}
	for _, id := range ids {
		ref := Ref(id)
		if o, ok := seen[ref]; ok {
			t.Errorf("Ref(%q) = Ref(%q) = %q", id, o, ref)
		}
		seen[ref] = id
		if ref == "" || len(ref) > 64 || strings.Contains(ref, "..") || strings.ContainsAny(ref, "/ \n") || ref[0] == '-' || ref[0] == '.' {
			t.Errorf("Ref(%q) = %q: not a safe name", id, ref)
		}
		if Ref(id) != ref {
			t.Errorf("Ref(%q) is not stable", id)
		}
	}
}

func TestTaskGraphRefusesSharedRefs(t *testing.T) {
	// "-x" is x-<8 hex digits of its hash>; a task literally named so
	// would share its branch.
	clash := Ref("-x")
	vs := GraphViolations(map[string]any{"tasks": []any{
		map[string]any{"id": "-x"}, map[string]any{"id": clash}, map[string]any{"id": "x"}}})
	want := fmt.Sprintf("task graph: tasks '-x' and '%s' would share the branch and worktree name '%s'; rename one", clash, clash)
	if len(vs) != 1 || vs[0] != want {
		t.Fatalf("violations %q, want %q", vs, want)
	}
	if vs := GraphViolations(map[string]any{"tasks": []any{
		map[string]any{"id": "x"}, map[string]any{"id": "-x"}, map[string]any{"id": "a/b"}, map[string]any{"id": "a b"}}}); len(vs) != 0 {
		t.Fatalf("distinct refs refused: %v", vs)
	}
}
