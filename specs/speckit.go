package specs

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// TaskStep summarises one compiled spec-kit task (the `steps` entries of the
// original's stratum_compile_speckit response).
type TaskStep struct {
	ID       string   `json:"id"`
	Title    string   `json:"title"`
	Parallel bool     `json:"parallel"`
	Ensures  []string `json:"ensures"`  // ensure expressions derived from criteria (never nil)
	Judgment []string `json:"judgment"` // criteria left to judgment (never nil)
}

// TaskCompilation is the result of CompileTasks.
// The JSON form is the success payload of the original's
// stratum_compile_speckit (without its status field).
type TaskCompilation struct {
	YAML     string     `json:"yaml"` // a v0.1 spec, deterministic for the same input
	FlowName string     `json:"flow_name"`
	Steps    []TaskStep `json:"steps"` // in file-name order
}

// CompileError types, as the original's error_type strings.
const (
	CompileDirectoryNotFound = "directory_not_found"
	CompileNoTasks           = "no_tasks"
	CompileStepIDCollision   = "step_id_collision"
	CompileFailed            = "compile_error"
)

// CompileError is the error of CompileTasks. Type is one of the Compile*
// constants; the JSON form is the original's error payload (without its
// status field).
type CompileError struct {
	Type    string `json:"error_type"`
	Message string `json:"message"`
}

func (e *CompileError) Error() string { return e.Message }

// DefaultTaskFlow is the flow name CompileTasks uses when none is given.
const DefaultTaskFlow = "tasks"

// Criterion patterns (upstream-behavior §2.20).
var (
	fileExistsRe   = regexp.MustCompile(`(?i)^file\s+(\S+)\s+exists?$`)
	fileContainsRe = regexp.MustCompile(`(?i)^file\s+(\S+)\s+contains?\s+(?:"([^"]+)"|'([^']+)'|(\S+))$`)
	testsPassRe    = regexp.MustCompile(`(?i)\btests?\b.*\bpass`)
	lintCleanRe    = regexp.MustCompile(`(?i)(no lint errors?|lint (pass(es)?|clean))`)

	titlePrefixRe  = regexp.MustCompile(`^#+\s*(?:Task:\s*)?`)
	parallelMarkRe = regexp.MustCompile(`(?i)\s*\[P\]\s*`)
	criteriaHeadRe = regexp.MustCompile(`(?i)^#+\s*Acceptance Criteria`)
	checkboxRe     = regexp.MustCompile(`^\s*-\s*\[[ xX]\]\s*(.+)`)
	nonIDCharRe    = regexp.MustCompile(`[^a-z0-9]`)
)

// Ensure expressions for the boolean criteria.
const (
	ensureTestsPass = "result.tests_pass == True"
	ensureLintClean = "result.lint_clean == True"
	ensureDone      = "result.done == True"
)

// task is one parsed task file.
type task struct {
	file      string // base name
	id        string
	title     string
	body      string
	parallel  bool
	ensures   []string
	judgment  []string
	testsPass bool
	lintClean bool
}

// CompileTasks compiles a spec-kit tasks directory (every *.md file directly
// in dir, in file-name order) into a v0.1 spec, following the original's task
// compiler (upstream-behavior §2.20):
//
//   - title: the first line starting with '#', without the leading #s and an
//     optional "Task:" prefix; "[P]" anywhere in it (any case) marks the task
//     parallel and is removed. A file without a heading uses its file name
//     (without .md) as title.
//   - body: the text between the title and an "Acceptance Criteria" heading
//     (any level, any case); criteria: the checkbox lines "- [ ]" / "- [x]"
//     after that heading.
//   - criterion → ensure: "file P exists" → file_exists("P"); "file P contains
//     T" (T a word, "…" or '…') → file_contains("P", "T"); "tests … pass" →
//     result.tests_pass == True; "no lint error(s)", "lint pass(es)", "lint
//     clean" → result.lint_clean == True; anything else is judgment, appended
//     to the intent as "Also verify: a; b".
//   - step id: the file name without .md, lower-cased, each character outside
//     [a-z0-9] replaced by '_', '_' trimmed at both ends, "t" prefixed when it
//     does not start with a letter ("01-research" → "t01_research"), "task"
//     when empty. Two files with the same id → step_id_collision.
//   - dependencies: a sequential task depends on the whole preceding [P] group
//     if there is one, else on the previous sequential task; a [P] task
//     depends on the last sequential task (none among themselves).
//   - output: contract TaskResult {done: boolean} (plus optional tests_pass /
//     lint_clean booleans when some criterion uses them, so that the ensures
//     reference declared fields); one compute function per task, named like
//     its step (intent = title, body and judgment lines; input task_context;
//     ensures + result.done == True; retries 2); flow input project_context;
//     each step maps task_context: $.input.project_context and has an
//     output_schema requiring done (+ tests_pass / lint_clean when used).
//
// The generated spec is checked with Parse; should it be refused (for
// example because of an unusual flow name), the error is compile_error with
// the first diagnostic. flowName "" means DefaultTaskFlow. The error is
// always a *CompileError. compile compiles the expressions (see Parse).
func CompileTasks(dir, flowName string, compile ExprCompiler) (*TaskCompilation, error) {
	if flowName == "" {
		flowName = DefaultTaskFlow
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, &CompileError{Type: CompileDirectoryNotFound, Message: fmt.Sprintf("tasks_dir '%s' is not a directory", dir)}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, &CompileError{Type: CompileFailed, Message: fmt.Sprintf("cannot read tasks_dir '%s': %v", dir, err)}
	}
	var names []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".md") {
			continue
		}
		if e.Type()&fs.ModeType != 0 && e.Type()&fs.ModeSymlink == 0 {
			continue // directories and special files
		}
		names = append(names, e.Name())
	}
	sort.Strings(names)
	if len(names) == 0 {
		return nil, &CompileError{Type: CompileNoTasks, Message: fmt.Sprintf("No task files (*.md) found in %s", dir)}
	}
	tasks := make([]*task, 0, len(names))
	for _, name := range names {
		path := filepath.Join(dir, name)
		st, err := os.Stat(path)
		if err != nil {
			return nil, &CompileError{Type: CompileFailed, Message: fmt.Sprintf("%s: %v", name, err)}
		}
		if !st.Mode().IsRegular() {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, &CompileError{Type: CompileFailed, Message: fmt.Sprintf("%s: %v", name, err)}
		}
		if !utf8.Valid(src) {
			return nil, &CompileError{Type: CompileFailed, Message: fmt.Sprintf("%s: not valid UTF-8", name)}
		}
		tasks = append(tasks, parseTask(name, string(src)))
	}
	if len(tasks) == 0 {
		return nil, &CompileError{Type: CompileNoTasks, Message: fmt.Sprintf("No task files (*.md) found in %s", dir)}
	}
	seen := map[string]string{}
	for _, t := range tasks {
		if first, dup := seen[t.id]; dup {
			return nil, &CompileError{Type: CompileStepIDCollision, Message: fmt.Sprintf(
				"Step ID collision: '%s' from '%s' conflicts with '%s'. Rename one of the files to produce a distinct step ID.",
				t.id, t.file, first)}
		}
		seen[t.id] = t.file
	}
	out, err := renderTaskSpec(tasks, flowName)
	if err != nil {
		return nil, &CompileError{Type: CompileFailed, Message: err.Error()}
	}
	// Never hand out a spec that stratum itself would refuse.
	if spec, ds := Parse("", []byte(out), compile); spec == nil {
		return nil, &CompileError{Type: CompileFailed, Message: "the generated spec is invalid: " + firstErrorMessage(ds)}
	}
	steps := make([]TaskStep, len(tasks))
	for i, t := range tasks {
		steps[i] = TaskStep{ID: t.id, Title: t.title, Parallel: t.parallel,
			Ensures: append([]string{}, t.ensures...), Judgment: append([]string{}, t.judgment...)}
	}
	return &TaskCompilation{YAML: out, FlowName: flowName, Steps: steps}, nil
}

// taskStepID derives a step id from a file stem.
func taskStepID(stem string) string {
	id := strings.Trim(nonIDCharRe.ReplaceAllString(strings.ToLower(stem), "_"), "_")
	if id == "" {
		return "task"
	}
	if id[0] < 'a' || id[0] > 'z' {
		id = "t" + id
	}
	return id
}

// parseTask parses one task file.
func parseTask(name, src string) *task {
	stem := strings.TrimSuffix(name, ".md")
	t := &task{file: name, id: taskStepID(stem)}
	src = strings.ReplaceAll(src, "\r\n", "\n")
	src = strings.ReplaceAll(src, "\r", "\n")
	lines := strings.Split(src, "\n")
	titleAt := -1
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimLeft(l, " \t"), "#") {
			titleAt = i
			raw := titlePrefixRe.ReplaceAllString(strings.TrimSpace(l), "")
			t.parallel = parallelMarkRe.MatchString(raw)
			t.title = strings.TrimSpace(parallelMarkRe.ReplaceAllString(raw, " "))
			break
		}
	}
	if t.title == "" {
		t.title = stem
	}
	critAt := -1
	for i := titleAt + 1; i < len(lines); i++ {
		if criteriaHeadRe.MatchString(lines[i]) {
			critAt = i
			break
		}
	}
	end := len(lines)
	if critAt >= 0 {
		end = critAt
	}
	t.body = strings.TrimSpace(strings.Join(lines[titleAt+1:end], "\n"))
	t.ensures, t.judgment = []string{}, []string{}
	if critAt < 0 {
		return t
	}
	for _, l := range lines[critAt+1:] {
		m := checkboxRe.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		c := strings.TrimSpace(m[1])
		if c == "" {
			continue
		}
		ens, ok := criterionEnsure(c)
		if !ok {
			t.judgment = append(t.judgment, c)
			continue
		}
		t.ensures = append(t.ensures, ens)
		switch ens {
		case ensureTestsPass:
			t.testsPass = true
		case ensureLintClean:
			t.lintClean = true
		}
	}
	return t
}

// criterionEnsure maps an acceptance criterion to an ensure expression;
// ok=false means the criterion is left to judgment.
func criterionEnsure(c string) (string, bool) {
	if m := fileExistsRe.FindStringSubmatch(c); m != nil {
		return fmt.Sprintf("file_exists(%s)", exprString(m[1])), true
	}
	if m := fileContainsRe.FindStringSubmatch(c); m != nil {
		text := m[2]
		if text == "" {
			text = m[3]
		}
		if text == "" {
			text = m[4]
		}
		return fmt.Sprintf("file_contains(%s, %s)", exprString(m[1]), exprString(text)), true
	}
	if testsPassRe.MatchString(c) {
		return ensureTestsPass, true
	}
	if lintCleanRe.MatchString(c) {
		return ensureLintClean, true
	}
	return "", false
}

// exprString quotes s as a double-quoted expression string literal.
func exprString(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`
}

// taskDependencies returns each task's depends_on list.
func taskDependencies(tasks []*task) [][]string {
	deps := make([][]string, len(tasks))
	lastSeq := ""
	var group []string
	for i, t := range tasks {
		if t.parallel {
			if lastSeq != "" {
				deps[i] = []string{lastSeq}
			}
			group = append(group, t.id)
			continue
		}
		switch {
		case len(group) > 0:
			deps[i] = group
		case lastSeq != "":
			deps[i] = []string{lastSeq}
		}
		group = nil
		lastSeq = t.id
	}
	return deps
}

// YAML node helpers.
func yStr(s string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
	if strings.Contains(s, "\n") {
		n.Style = yaml.LiteralStyle
	}
	return n
}

func yRaw(tag, v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: v} }

func yMap(kv ...any) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for i := 0; i+1 < len(kv); i += 2 {
		n.Content = append(n.Content, yStr(kv[i].(string)), kv[i+1].(*yaml.Node))
	}
	return n
}

func ySeq(flow bool, items ...*yaml.Node) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: items}
	if flow {
		n.Style = yaml.FlowStyle
	}
	return n
}

func yStrs(flow bool, ss []string) *yaml.Node {
	items := make([]*yaml.Node, len(ss))
	for i, s := range ss {
		items[i] = yStr(s)
	}
	return ySeq(flow, items...)
}

func yType(t string) *yaml.Node { return yMap("type", yStr(t)) }

// renderTaskSpec renders the generated v0.1 spec.
func renderTaskSpec(tasks []*task, flowName string) (string, error) {
	anyTests, anyLint := false, false
	for _, t := range tasks {
		anyTests = anyTests || t.testsPass
		anyLint = anyLint || t.lintClean
	}
	optionalBool := func() *yaml.Node { return yMap("type", yStr("boolean"), "optional", yRaw("!!bool", "true")) }
	contract := yMap("done", yType("boolean"))
	if anyTests {
		contract.Content = append(contract.Content, yStr("tests_pass"), optionalBool())
	}
	if anyLint {
		contract.Content = append(contract.Content, yStr("lint_clean"), optionalBool())
	}

	functions := yMap()
	steps := ySeq(false)
	deps := taskDependencies(tasks)
	for i, t := range tasks {
		intent := []string{t.title}
		if t.body != "" {
			intent = append(intent, t.body)
		}
		if len(t.judgment) > 0 {
			intent = append(intent, "Also verify: "+strings.Join(t.judgment, "; "))
		}
		ensures := append(append([]string{}, t.ensures...), ensureDone)
		functions.Content = append(functions.Content, yStr(t.id), yMap(
			"mode", yStr("compute"),
			"intent", yStr(strings.Join(intent, "\n")),
			"input", yMap("task_context", yType("string")),
			"output", yStr("TaskResult"),
			"ensure", yStrs(false, ensures),
			"retries", yRaw("!!int", "2"),
		))

		required := []string{"done"}
		props := yMap("done", yType("boolean"))
		if t.testsPass {
			required = append(required, "tests_pass")
			props.Content = append(props.Content, yStr("tests_pass"), yType("boolean"))
		}
		if t.lintClean {
			required = append(required, "lint_clean")
			props.Content = append(props.Content, yStr("lint_clean"), yType("boolean"))
		}
		step := yMap(
			"id", yStr(t.id),
			"function", yStr(t.id),
			"inputs", yMap("task_context", yStr("$.input.project_context")),
		)
		if len(deps[i]) > 0 {
			step.Content = append(step.Content, yStr("depends_on"), yStrs(true, deps[i]))
		}
		step.Content = append(step.Content, yStr("output_schema"), yMap(
			"type", yStr("object"),
			"required", yStrs(true, required),
			"properties", props,
		))
		steps.Content = append(steps.Content, step)
	}

	doc := yMap(
		"version", yStr(Version01),
		"contracts", yMap("TaskResult", contract),
		"functions", functions,
		"flows", yMap(flowName, yMap(
			"input", yMap("project_context", yType("string")),
			"output", yStr("TaskResult"),
			"steps", steps,
		)),
	)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{doc}}); err != nil {
		return "", fmt.Errorf("rendering the spec: %w", err)
	}
	if err := enc.Close(); err != nil {
		return "", fmt.Errorf("rendering the spec: %w", err)
	}
	return buf.String(), nil
}

var _ error = (*CompileError)(nil)
