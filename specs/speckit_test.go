package specs

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

const speckitDir = "../testdata/speckit"

func init() {
	// The -update flag is shared with the package's other golden tests.
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files")
	}
}

func speckitUpdate() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

func TestTaskStepID(t *testing.T) {
	for stem, want := range map[string]string{
		"01-research": "t01_research", "02a-backend": "t02a_backend", "research": "research",
		"my_task": "my_task", "my task": "my_task", "MyTask": "mytask", "": "task", "---": "task",
		"__x__": "x", "a--b": "a__b", "é-café": "caf", "_1": "t1", "Ünïcode": "n_code",
	} {
		if got := taskStepID(stem); got != want {
			t.Errorf("taskStepID(%q) = %q, want %q", stem, got, want)
		}
	}
}

func TestCriterionEnsure(t *testing.T) {
	tests := []struct {
		in, want string // want "" = judgment
	}{
		{"file src/foo.ts exists", `file_exists("src/foo.ts")`},
		{"file src/bar.py exist", `file_exists("src/bar.py")`},
		{"File src/Foo.ts Exists", `file_exists("src/Foo.ts")`},
		{`file C:\d\f exists`, `file_exists("C:\\d\\f")`},
		{"file src/foo.ts contains verifyJwt", `file_contains("src/foo.ts", "verifyJwt")`},
		{`file src/foo.ts contains "some string"`, `file_contains("src/foo.ts", "some string")`},
		{"file src/foo.ts contains 'hello world'", `file_contains("src/foo.ts", "hello world")`},
		{`file src/x.ts contains with"quotes`, `file_contains("src/x.ts", "with\"quotes")`},
		{"file a contain b", `file_contains("a", "b")`},
		{"tests pass", "result.tests_pass == True"},
		{"all tests pass", "result.tests_pass == True"},
		{"Test passes", "result.tests_pass == True"},
		{"the tests should pass on CI", "result.tests_pass == True"},
		{"no lint errors", "result.lint_clean == True"},
		{"No lint error", "result.lint_clean == True"},
		{"lint passes", "result.lint_clean == True"},
		{"lint pass", "result.lint_clean == True"},
		{"lint clean", "result.lint_clean == True"},
		{"Middleware correctly rejects expired tokens", ""},
		{"file src/a.ts contains two words", ""},
		{"file exists", ""},
		{"contest passes", ""}, // "test" must be a word
		{"lint is fine", ""},
	}
	for _, tt := range tests {
		got, ok := criterionEnsure(tt.in)
		if (tt.want == "") == ok || got != tt.want {
			t.Errorf("criterionEnsure(%q) = %q, %v; want %q", tt.in, got, ok, tt.want)
		}
	}
}

func TestParseTask(t *testing.T) {
	tests := []struct {
		name, src         string
		title, body       string
		parallel          bool
		ensures, judgment []string
	}{
		{"task prefix", "# Task: Build it\n", "Build it", "", false, nil, nil},
		{"h2 without prefix", "## Build it\nbody\n", "Build it", "body", false, nil, nil},
		{"no space after #", "#Build\n", "Build", "", false, nil, nil},
		{"indented heading", "   # Task: Build\n", "Build", "", false, nil, nil},
		{"[P] prefix", "# Task: [P] Build\n", "Build", "", true, nil, nil},
		{"[p] in the middle", "# Build [p] it\n", "Build it", "", true, nil, nil},
		{"[P] at the end", "# Task: Build [P]\n", "Build", "", true, nil, nil},
		{"task: is case-sensitive", "# task: Build\n", "task: Build", "", false, nil, nil},
		{"no heading: file name, whole text is the body", "just text\nmore\n", "stem", "just text\nmore", false, nil, nil},
		{"empty file", "", "stem", "", false, nil, nil},
		{"CRLF", "# Task: A\r\nline\r\n## Acceptance Criteria\r\n- [ ] tests pass\r\n- [ ] be nice\r\n", "A", "line", false,
			[]string{ensureTestsPass}, []string{"be nice"}},
		{"criteria at any heading level, any case", "# A\nb\n#### ACCEPTANCE CRITERIA:\n- [x] lint clean\n", "A", "b", false,
			[]string{ensureLintClean}, nil},
		{"checkboxes before the heading are body", "# A\n- [ ] tests pass\n", "A", "- [ ] tests pass", false, nil, nil},
		{"criteria continue past later headings", "# A\n## Acceptance Criteria\n- [ ] x\n## Notes\n- [ ] y\n", "A", "", false,
			nil, []string{"x", "y"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseTask("stem.md", tt.src)
			if got.title != tt.title || got.body != tt.body || got.parallel != tt.parallel {
				t.Errorf("title %q body %q parallel %v; want %q %q %v", got.title, got.body, got.parallel, tt.title, tt.body, tt.parallel)
			}
			if len(got.ensures)+len(tt.ensures) > 0 && !reflect.DeepEqual(got.ensures, tt.ensures) {
				t.Errorf("ensures %q, want %q", got.ensures, tt.ensures)
			}
			if len(got.judgment)+len(tt.judgment) > 0 && !reflect.DeepEqual(got.judgment, tt.judgment) {
				t.Errorf("judgment %q, want %q", got.judgment, tt.judgment)
			}
		})
	}
}

func TestTaskDependencies(t *testing.T) {
	mk := func(spec string) []*task { // "a b* c*": * = parallel
		var ts []*task
		for _, f := range strings.Fields(spec) {
			ts = append(ts, &task{id: strings.TrimSuffix(f, "*"), parallel: strings.HasSuffix(f, "*")})
		}
		return ts
	}
	tests := []struct {
		spec string
		want [][]string
	}{
		{"t1", [][]string{nil}},
		{"t1 t2", [][]string{nil, {"t1"}}},
		{"t1 a* b*", [][]string{nil, {"t1"}, {"t1"}}},
		{"t1 a* b* t3", [][]string{nil, {"t1"}, {"t1"}, {"a", "b"}}},
		{"a* b*", [][]string{nil, nil}},
		{"a* b* t3 t4", [][]string{nil, nil, {"a", "b"}, {"t3"}}},
		{"t1 a* b* t3 t4", [][]string{nil, {"t1"}, {"t1"}, {"a", "b"}, {"t3"}}},
		{"t1 a* t2 b* c* t3", [][]string{nil, {"t1"}, {"a"}, {"t2"}, {"t2"}, {"b", "c"}}},
	}
	for _, tt := range tests {
		if got := taskDependencies(mk(tt.spec)); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got %q, want %q", tt.spec, got, tt.want)
		}
	}
}

// TestCompileTasksGolden compiles each fixture directory and compares the
// YAML with testdata/speckit/<dir>.golden.yaml (go test -update rewrites).
func TestCompileTasksGolden(t *testing.T) {
	for _, dir := range []string{"sequential", "parallel", "criteria"} {
		t.Run(dir, func(t *testing.T) {
			c, err := CompileTasks(filepath.Join(speckitDir, dir), "", testCompile)
			if err != nil {
				t.Fatalf("CompileTasks: %v", err)
			}
			if c.FlowName != DefaultTaskFlow {
				t.Errorf("FlowName %q", c.FlowName)
			}
			golden := filepath.Join(speckitDir, dir+".golden.yaml")
			if speckitUpdate() {
				if err := os.WriteFile(golden, []byte(c.YAML), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if c.YAML != string(want) {
				t.Errorf("YAML differs from %s (go test -update rewrites it)\n--- got\n%s", golden, c.YAML)
			}
			again, _ := CompileTasks(filepath.Join(speckitDir, dir), "", testCompile)
			if again.YAML != c.YAML {
				t.Error("output is not deterministic")
			}
			var doc map[string]any
			if err := yaml.Unmarshal([]byte(c.YAML), &doc); err != nil {
				t.Fatalf("generated YAML does not decode: %v", err)
			}
			if doc["version"] != "0.1" {
				t.Errorf("version %#v, want the string \"0.1\"", doc["version"])
			}
		})
	}
}

func TestCompileTasksSteps(t *testing.T) {
	c, err := CompileTasks(filepath.Join(speckitDir, "parallel"), "release_flow", testCompile)
	if err != nil {
		t.Fatal(err)
	}
	want := []TaskStep{
		{ID: "t01_base", Title: "Base", Ensures: []string{ensureTestsPass}, Judgment: []string{}},
		{ID: "t02a_api", Title: "API", Parallel: true, Ensures: []string{}, Judgment: []string{"API remains compatible"}},
		{ID: "t02b_docs", Title: "Docs", Parallel: true, Ensures: []string{}, Judgment: []string{}},
		{ID: "t03_final", Title: "Finalize", Ensures: []string{}, Judgment: []string{}},
		{ID: "t04a_notes", Title: "Release notes", Parallel: true, Ensures: []string{}, Judgment: []string{}},
		{ID: "t04b_blog", Title: "Blog post", Parallel: true, Ensures: []string{}, Judgment: []string{}},
		{ID: "t05_announce", Title: "Announce", Ensures: []string{}, Judgment: []string{}},
	}
	if !reflect.DeepEqual(c.Steps, want) {
		t.Errorf("steps\n got %+v\nwant %+v", c.Steps, want)
	}
	if c.FlowName != "release_flow" || !strings.Contains(c.YAML, "\n  release_flow:\n") {
		t.Errorf("flow name not used: %q", c.FlowName)
	}
	// depends_on as the original computes it.
	var doc struct {
		Flows map[string]struct {
			Steps []struct {
				ID        string   `yaml:"id"`
				DependsOn []string `yaml:"depends_on"`
			} `yaml:"steps"`
		} `yaml:"flows"`
	}
	if err := yaml.Unmarshal([]byte(c.YAML), &doc); err != nil {
		t.Fatal(err)
	}
	deps := map[string][]string{}
	for _, s := range doc.Flows["release_flow"].Steps {
		deps[s.ID] = s.DependsOn
	}
	wantDeps := map[string][]string{
		"t01_base": nil, "t02a_api": {"t01_base"}, "t02b_docs": {"t01_base"},
		"t03_final": {"t02a_api", "t02b_docs"}, "t04a_notes": {"t03_final"}, "t04b_blog": {"t03_final"},
		"t05_announce": {"t04a_notes", "t04b_blog"},
	}
	if !reflect.DeepEqual(deps, wantDeps) {
		t.Errorf("depends_on\n got %v\nwant %v", deps, wantDeps)
	}
	// The JSON shape of the original's response.
	b, _ := json.Marshal(c.Steps[2])
	if string(b) != `{"id":"t02b_docs","title":"Docs","parallel":true,"ensures":[],"judgment":[]}` {
		t.Errorf("json %s", b)
	}
}

func TestCompileTasksErrors(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "file.md")
	if err := os.WriteFile(file, []byte("# x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badUTF8 := filepath.Join(tmp, "bad")
	if err := os.MkdirAll(badUTF8, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(badUTF8, "a.md"), []byte("# \xff\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	onlyDirs := filepath.Join(tmp, "dirs")
	if err := os.MkdirAll(filepath.Join(onlyDirs, "sub.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, dir, typ string
		msg            []string
	}{
		{"missing dir", filepath.Join(speckitDir, "does-not-exist"), CompileDirectoryNotFound, []string{"is not a directory", "does-not-exist"}},
		{"a file, not a dir", file, CompileDirectoryNotFound, []string{"is not a directory"}},
		{"no md files", filepath.Join(speckitDir, "empty"), CompileNoTasks, []string{"No task files"}},
		{"only a directory named *.md", onlyDirs, CompileNoTasks, []string{"No task files"}},
		{"collision names both files", filepath.Join(speckitDir, "collision"), CompileStepIDCollision, []string{"'t01_a'", "01-a.md", "01_a.md"}},
		{"invalid utf-8", badUTF8, CompileFailed, []string{"a.md", "UTF-8"}},
		{"generated spec refused by Parse", filepath.Join(speckitDir, "sequential"), CompileFailed, []string{"the generated spec is invalid", "larger than"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			flow := ""
			if tt.typ == CompileFailed && strings.Contains(tt.name, "Parse") {
				flow = strings.Repeat("f", MaxSpecBytes) // makes the spec too large
			}
			c, err := CompileTasks(tt.dir, flow, testCompile)
			var ce *CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, %v; want a *CompileError", c, err)
			}
			if ce.Type != tt.typ {
				t.Errorf("type %q, want %q (%s)", ce.Type, tt.typ, ce.Message)
			}
			for _, m := range tt.msg {
				if !strings.Contains(ce.Error(), m) {
					t.Errorf("message %q does not contain %q", ce.Error(), m)
				}
			}
		})
	}
}

func TestCompileTasksQuoting(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("1.md", "# Task: true\n\n  indented: yes  \n\ttab\n## Acceptance Criteria\n- [ ] file 'a b' exists\n- [ ] null\n")
	write("2.md", "# 0.1\n")
	write("3.md", "# Task: key: value # not a comment\n")
	c, err := CompileTasks(dir, "weird flow: name", testCompile)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Functions map[string]struct {
			Intent string   `yaml:"intent"`
			Ensure []string `yaml:"ensure"`
		} `yaml:"functions"`
		Flows map[string]any `yaml:"flows"`
	}
	if err := yaml.Unmarshal([]byte(c.YAML), &doc); err != nil {
		t.Fatalf("%v\n%s", err, c.YAML)
	}
	wantIntent := map[string]string{
		"t1": "true\nindented: yes  \n\ttab\nAlso verify: file 'a b' exists; null",
		"t2": "0.1",
		"t3": "key: value # not a comment",
	}
	for id, want := range wantIntent {
		if got := doc.Functions[id].Intent; got != want {
			t.Errorf("%s intent %q, want %q", id, got, want)
		}
	}
	if _, ok := doc.Flows["weird flow: name"]; !ok {
		t.Errorf("flow name lost: %v", doc.Flows)
	}
}

// TestCompileTasksParses checks that every generated spec passes Parse, and
// that the step schemas and the contract come out as generated.
func TestCompileTasksParses(t *testing.T) {
	for _, dir := range []string{"sequential", "parallel", "criteria"} {
		t.Run(dir, func(t *testing.T) {
			c, err := CompileTasks(filepath.Join(speckitDir, dir), "flow_"+dir, testCompile)
			if err != nil {
				t.Fatal(err)
			}
			spec, ds := Parse(dir+".stratum.yaml", []byte(c.YAML), testCompile)
			if spec == nil || ds.HasErrors() {
				t.Fatalf("generated spec rejected:\n%v\n%s", ds, c.YAML)
			}
			if spec.Version != Version01 {
				t.Errorf("version %q", spec.Version)
			}
			flow := spec.Flows["flow_"+dir]
			if flow == nil || len(flow.Steps) != len(c.Steps) {
				t.Fatalf("flow: %+v", flow)
			}
			for i, st := range flow.Steps {
				if st.ID != c.Steps[i].ID || st.Function != c.Steps[i].ID || st.Fn == nil || st.Fn.Mode != ModeCompute {
					t.Errorf("step %d: %+v", i, st)
				}
				if st.Schema == nil {
					t.Errorf("step %s has no compiled output_schema", st.ID)
				} else if v := st.Schema.Validate(map[string]any{}); len(v) == 0 || v[0] != "missing required property 'done'" {
					t.Errorf("step %s schema: %q", st.ID, v)
				}
				if st.Retries != 2 {
					t.Errorf("step %s retries %d", st.ID, st.Retries)
				}
				if n := len(st.Ensure); n != len(c.Steps[i].Ensures)+1 {
					t.Errorf("step %s: %d ensures", st.ID, n)
				}
			}
			if tr := spec.Contracts["TaskResult"]; tr == nil || tr.Hash == "" || tr.Field("done") == nil {
				t.Errorf("TaskResult: %+v", tr)
			}
		})
	}
}
