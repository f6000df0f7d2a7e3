package fanout

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Task is one task of a task graph, read from a decompose step's output or
// a parallel_dispatch step's source.
type Task struct {
	ID          string
	Description string
	FilesOwned  []string
	FilesRead   []string
	DependsOn   []string
	// Raw is the task object as given (what executors receive).
	Raw map[string]any
	// Stage is set on the tasks of a pipeline step (ExpandPipeline).
	Stage *StageTask
}

// ParseTasks reads a parallel_dispatch source: a list of task objects, each
// with a non-empty string id. A graph object {"tasks": [...]} is accepted
// too. The error says what was found instead.
func ParseTasks(source any) ([]Task, error) {
	if m, ok := source.(map[string]any); ok {
		if inner, ok := m["tasks"]; ok {
			source = inner
		}
	}
	list, ok := source.([]any)
	if !ok {
		return nil, fmt.Errorf("the source is %s, not a task list ([{id, description, files_owned, depends_on}, …])", describe(source))
	}
	tasks := make([]Task, 0, len(list))
	for i, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("task %d is %s, not an object with an id", i, describe(item))
		}
		t := Task{Raw: m}
		t.ID, _ = m["id"].(string)
		if strings.TrimSpace(t.ID) == "" {
			return nil, fmt.Errorf("task %d has no id (a non-empty string)", i)
		}
		t.Description, _ = m["description"].(string)
		var err error
		if t.FilesOwned, err = stringList(m, "files_owned", t.ID); err != nil {
			return nil, err
		}
		if t.FilesRead, err = stringList(m, "files_read", t.ID); err != nil {
			return nil, err
		}
		if t.DependsOn, err = stringList(m, "depends_on", t.ID); err != nil {
			return nil, err
		}
		tasks = append(tasks, t)
	}
	return tasks, nil
}

func stringList(m map[string]any, key, id string) ([]string, error) {
	raw, ok := m[key]
	if !ok || raw == nil {
		return nil, nil
	}
	list, ok := raw.([]any)
	if !ok {
		if ss, ok := raw.([]string); ok {
			return append([]string(nil), ss...), nil
		}
		return nil, fmt.Errorf("task '%s': %s is %s, not a list of strings", id, key, describe(raw))
	}
	out := make([]string, 0, len(list))
	for _, v := range list {
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("task '%s': %s holds %s, not a string", id, key, describe(v))
		}
		out = append(out, s)
	}
	return out, nil
}

func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("a string (%q)", clipText(x, 40))
	case bool:
		return "a boolean"
	case float64, int, int64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("a %T", v)
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// GraphViolations checks a decompose step's output (a task graph:
// {"tasks": [...]}) before anything is dispatched: a task list of objects
// with ids, no duplicate id, no two ids sharing a branch and worktree name
// (Ref), no dependency on an unknown task or on itself, no cycle. Each
// problem is one violation, fed back to the retry.
func GraphViolations(output any) []string {
	tasks, err := ParseTasks(output)
	if err != nil {
		return []string{"task graph: " + err.Error()}
	}
	return ListViolations(tasks)
}

// ListViolations checks parsed tasks (see GraphViolations).
func ListViolations(tasks []Task) []string {
	var vs []string
	ids := map[string]bool{}
	for _, t := range tasks {
		if ids[t.ID] {
			vs = append(vs, fmt.Sprintf("task graph: duplicate task id '%s'", t.ID))
		}
		ids[t.ID] = true
	}
	for _, t := range tasks {
		for _, d := range t.DependsOn {
			switch {
			case d == t.ID:
				vs = append(vs, fmt.Sprintf("task graph: task '%s' depends on itself", t.ID))
			case !ids[d]:
				vs = append(vs, fmt.Sprintf("task graph: task '%s' depends on unknown task '%s'", t.ID, d))
			}
		}
	}
	refs := make(map[string]string, len(tasks))
	for _, t := range tasks {
		ref := Ref(t.ID)
		if o, ok := refs[ref]; ok && o != t.ID {
			vs = append(vs, fmt.Sprintf("task graph: tasks '%s' and '%s' would share the branch and worktree name '%s'; rename one", o, t.ID, ref))
			continue
		}
		refs[ref] = t.ID
	}
	if len(vs) > 0 {
		return vs
	}
	if cycle := findCycle(tasks); len(cycle) > 0 {
		vs = append(vs, "task graph: dependency cycle "+strings.Join(cycle, " → "))
	}
	return vs
}

// Ref is the name a task's git branch and worktree directory take from its
// id (stratum/<flow>/<step>/<ref>, <worktrees>/<flow>/<step>/<ref>). An id
// that is already a safe name — lower-case letters, digits, '.', '_' and
// '-', starting and ending with a letter or digit, no "..", no ".lock"
// ending, at most 64 bytes — is its own ref; any other id (upper case, '/',
// spaces, newlines, a leading '-' …) is cleaned to such a name and
// followed by '-' and 8 hex digits of the id's SHA-256, so ids that clean
// to the same text ("x" and "-x", "a/b" and "a b", "A" and "a" on a
// case-insensitive file system) still get different branches and
// worktrees. ListViolations refuses a graph in which two ids would still
// share a ref.
func Ref(id string) string {
	if safeRef(id) {
		return id
	}
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(id) {
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			b.WriteRune(r)
			dash = false
			continue
		}
		if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	clean := b.String()
	for strings.Contains(clean, "..") {
		clean = strings.ReplaceAll(clean, "..", ".")
	}
	if len(clean) > 40 {
		clean = clean[:40]
	}
	clean = strings.Trim(clean, ".-_")
	sum := sha256.Sum256([]byte(id))
	h := hex.EncodeToString(sum[:4])
	if clean == "" {
		return h
	}
	return clean + "-" + h
}

// safeRef reports whether id is its own Ref.
func safeRef(id string) bool {
	if id == "" || len(id) > 64 || strings.Contains(id, "..") || strings.HasSuffix(id, ".lock") {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || i == len(id)-1 || c != '.' && c != '_' && c != '-') {
			return false
		}
	}
	return true
}

// findCycle returns one dependency cycle (first node repeated at the end),
// or nil.
func findCycle(tasks []Task) []string {
	deps := map[string][]string{}
	var order []string
	for _, t := range tasks {
		if _, ok := deps[t.ID]; !ok {
			order = append(order, t.ID)
		}
		deps[t.ID] = t.DependsOn
	}
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var stack []string
	var found []string
	var visit func(id string) bool
	visit = func(id string) bool {
		color[id] = grey
		stack = append(stack, id)
		for _, d := range deps[id] {
			switch color[d] {
			case grey:
				for i, s := range stack {
					if s == d {
						found = append(append([]string(nil), stack[i:]...), d)
						return true
					}
				}
			case white:
				if visit(d) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[id] = black
		return false
	}
	for _, id := range order {
		if color[id] == white && visit(id) {
			return found
		}
	}
	return nil
}

// Prompt renders a parallel_dispatch step's intent_template for a task
// as the original does (str.format with the task's keys; {task.KEY} reads
// the same keys): every {key} the task has is replaced; a template naming a
// key the task lacks is used as written.
func Prompt(template string, task map[string]any) string {
	var b strings.Builder
	rest := template
	for {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			b.WriteString(rest)
			break
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			b.WriteString(rest)
			break
		}
		key := strings.TrimPrefix(rest[i+1:i+j], "task.")
		v, ok := task[key]
		if !ok {
			return template
		}
		b.WriteString(rest[:i])
		if s, ok := v.(string); ok {
			b.WriteString(s)
		} else {
			raw, _ := json.Marshal(v)
			b.Write(raw)
		}
		rest = rest[i+j+1:]
	}
	return b.String()
}

// UnixSeconds is a time as the original's float timestamps.
func UnixSeconds(t time.Time) *float64 {
	f := float64(t.UnixNano()) / 1e9
	return &f
}

// RequireSatisfied evaluates a parallel_dispatch step's require: all (or
// empty) = no failure, any = at least one complete, N = at least N
// complete. It is the rule of stratum_parallel_done (engine) and of the
// fan-outs that stratum runs itself (engine/run, engine/mcp).
func RequireSatisfied(require string, completed, failed int) bool {
	switch strings.TrimSpace(require) {
	case "", "all":
		return failed == 0
	case "any":
		return completed >= 1
	}
	n, err := strconv.Atoi(strings.TrimSpace(require))
	if err != nil {
		return failed == 0
	}
	return completed >= n
}

// RequireUnsatisfiable reports whether require can no longer be met once
// the open tasks (pending or running) end, whatever their outcome: the
// fan-out may then cancel them (the original's cascade cancel).
func RequireUnsatisfiable(require string, completed, failed, open int) bool {
	return !RequireSatisfied(require, completed+open, failed)
}
