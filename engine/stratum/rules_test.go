package stratum

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Rule 18: the final answer after the tool turns is parsed and checked
// like any answer; its violations are retried with the feedback (the next
// attempt starts its own tool loop), and each tool call's trace carries
// its name, arguments, result and duration.
func TestToolFinalAnswerCheckedAndRetried(t *testing.T) {
	srv := newCapture(t, "application/json", func(n int, body map[string]any) string {
		switch n {
		case 0, 2: // each attempt calls the tool first
			return openAIToolCalls([3]string{fmt.Sprintf("c%d", n), "weather", `{"city":"Oslo"}`})
		case 1:
			return openAIText(`{"summary":""}`) // breaks the postcondition
		}
		return openAIText(`{"summary":"cold"}`)
	})
	tool := NewTool("weather", "The weather", func(ctx context.Context, in cityIn) (weather, error) {
		return weather{City: in.City, TempC: -3}, nil
	})
	rt, ctx := openAIRuntime(t, srv, Options{})
	fn := MustInfer("forecast", Spec[cityIn, forecast]{Intent: "Weather", Tools: []Tool{tool},
		Ensure: []Check[forecast]{Ensure("the summary is not empty", func(f forecast) bool { return f.Summary != "" })}})
	got, err := fn.Call(ctx, cityIn{City: "Oslo"})
	if err != nil || got.Summary != "cold" {
		t.Fatalf("got %+v, %v", got, err)
	}
	if n := len(srv.bodies); n != 4 {
		t.Fatalf("%d requests, want 4 (two attempts of two turns)", n)
	}
	if !strings.Contains(fmt.Sprint(srv.body(2)["messages"]), "the summary is not empty") {
		t.Fatalf("the retry does not carry the violation: %v", srv.body(2)["messages"])
	}
	tr := rt.Trace()[0]
	if tr.Attempts != 2 || len(tr.Violations) != 1 || len(tr.ToolCalls) != 2 {
		t.Fatalf("trace %+v", tr)
	}
	for i, c := range tr.ToolCalls {
		if c.Attempt != i+1 || c.Round != 1 || c.Name != "weather" || !strings.Contains(string(c.Args), "Oslo") ||
			!strings.Contains(string(c.Result), "-3") || c.Error != "" || c.Duration <= 0 {
			t.Errorf("tool call %d traced as %+v", i, c)
		}
	}
}

// Rule 18: every turn is charged to the budget and checked before the
// next: a token budget the first turn uses up stops the call before the
// second turn is sent.
func TestToolTurnsChargedToBudget(t *testing.T) {
	srv := newCapture(t, "application/json", func(n int, body map[string]any) string {
		if n == 0 {
			return openAIToolCalls([3]string{"c0", "weather", `{"city":"Oslo"}`}) // 110 tokens
		}
		return openAIText(`{"summary":"cold"}`)
	})
	var ran int
	tool := NewTool("weather", "The weather", func(ctx context.Context, in cityIn) (weather, error) {
		ran++
		return weather{City: in.City}, nil
	})
	_, ctx := openAIRuntime(t, srv, Options{})
	fn := MustInfer("forecast", Spec[cityIn, forecast]{Intent: "Weather", Tools: []Tool{tool}, Budget: Budget{Tokens: 100}})
	_, err := fn.Call(ctx, cityIn{City: "Oslo"})
	var be *BudgetError
	if !errors.As(err, &be) || be.Reason != "tokens" {
		t.Fatalf("err = %v", err)
	}
	if n := len(srv.bodies); n != 1 {
		t.Fatalf("%d requests: the turn after the budget ran out was sent", n)
	}
}

// Rule 19: a Stream is recorded and replayed like a Call, and its budget
// is the Call's: the recording of a streamed call answers the same Stream
// offline (its retry included), and a token budget below one attempt
// stops the stream before a second attempt.
func TestStreamRecordReplayAndBudget(t *testing.T) {
	bad := `{"label":"positive","confidence":0.3}`
	good := `{"label":"positive","confidence":0.9}`
	srv := newSSE(t, func(n int) []string {
		if n%2 == 0 { // each run's first attempt fails its postcondition
			return openAIEvents(bad, 6)
		}
		return openAIEvents(good, 6)
	}, false)
	t.Setenv("STRATUM_HOME", t.TempDir())
	env := map[string]string{"OPENAI_BASE_URL": srv.srv.URL, "OPENAI_API_KEY": "k", "STRATUM_MODEL": "openai/gpt-4o-mini"}
	file := filepath.Join(t.TempDir(), "stream.jsonl")
	runtime := func(opts Options) *Runtime {
		t.Helper()
		opts.Getenv, opts.Stderr = func(k string) string { return env[k] }, io.Discard
		rt, err := New(opts)
		if err != nil {
			t.Fatal(err)
		}
		return rt
	}
	confident := Ensure("confidence above 0.5", func(s sentiment) bool { return s.Confidence > 0.5 })
	fn := classify(t, Spec[textIn, sentiment]{Ensure: []Check[sentiment]{confident}})
	rec := runtime(Options{Record: file})
	if got, err := collect(fn.Stream(WithRuntime(context.Background(), rec), textIn{Text: "nice"})); err != nil || !got[len(got)-1].Final {
		t.Fatalf("recording: %v", err)
	}
	if err := rec.Close(context.Background()); err != nil { // writes the recording
		t.Fatal(err)
	}
	// The budget: the server answers the first attempt (70 tokens) as
	// before; the second is not streamed.
	live := runtime(Options{})
	defer live.Close(context.Background())
	tight := classify(t, Spec[textIn, sentiment]{Ensure: []Check[sentiment]{confident}, Budget: Budget{Tokens: 60}})
	got, err := collect(tight.Stream(WithRuntime(context.Background(), live), textIn{Text: "nice"}))
	var be *BudgetError
	if !errors.As(err, &be) || be.Reason != "tokens" {
		t.Fatalf("a stream over its token budget: %v after %d elements", err, len(got))
	}
	for _, p := range got {
		if p.Attempt > 1 {
			t.Fatalf("a second attempt streamed past the budget: %+v", p)
		}
	}
	srv.srv.Close() // replay must not need the server
	rt := runtime(Options{Replay: file})
	defer rt.Close(context.Background())
	replay := WithRuntime(context.Background(), rt)
	got, err = collect(fn.Stream(replay, textIn{Text: "nice"}))
	if err != nil {
		t.Fatalf("replayed stream: %v", err)
	}
	last := got[len(got)-1]
	var retried bool
	for _, p := range got {
		retried = retried || len(p.Retry) == 1
	}
	if !last.Final || last.Value.Confidence != 0.9 || last.Attempt != 2 || !retried {
		t.Fatalf("replayed stream: last %+v, retried %v", last, retried)
	}
}

// Rule 22: every exported name of the packages a program uses — the
// library, review, and the store opener with its team-mode import — has a
// doc comment (TestPublicDocsWrittenForUsers checks what the docs say).
func TestEveryExportedNameDocumented(t *testing.T) {
	for _, dir := range []string{".", "../../review", "../../store/shared", "../../store/team"} {
		fset := token.NewFileSet()
		pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool {
			return !strings.HasSuffix(fi.Name(), "_test.go")
		}, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pkgs {
			files := make([]*ast.File, 0, len(p.Files))
			for _, f := range p.Files {
				files = append(files, f)
			}
			d, err := doc.NewFromFiles(fset, files, "example.com/"+p.Name)
			if err != nil {
				t.Fatal(err)
			}
			missing := func(name, text string) {
				if strings.TrimSpace(text) == "" {
					t.Errorf("%s: %s has no doc comment", dir, name)
				}
			}
			missing("package "+p.Name, d.Doc)
			values := func(vs []*doc.Value) {
				for _, v := range vs {
					for _, s := range v.Decl.Specs {
						vs := s.(*ast.ValueSpec)
						for _, n := range vs.Names {
							if n.IsExported() && v.Doc == "" {
								missing(n.Name, vs.Doc.Text()+vs.Comment.Text())
							}
						}
					}
				}
			}
			values(d.Consts)
			values(d.Vars)
			for _, f := range d.Funcs {
				missing(f.Name, f.Doc)
			}
			for _, ty := range d.Types {
				missing(ty.Name, ty.Doc)
				values(ty.Consts)
				values(ty.Vars)
				for _, f := range append(ty.Funcs, ty.Methods...) {
					missing(ty.Name+"."+f.Name, f.Doc)
				}
			}
		}
	}
}

// Rule 22: the README's Go library section says how to depend on the
// module (a release, or a checkout through replace) and how a program
// enables team mode.
func TestReadmeSaysHowToDepend(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## The Go library\n")
	if !ok {
		t.Fatal("README has no section \"The Go library\"")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	for _, want := range []string{"go get github.com/stratum-go/stratum@", "go mod edit -replace github.com/stratum-go/stratum=",
		"shared.OpenDefault", `import _ "github.com/stratum-go/stratum/store/team"`} {
		if !strings.Contains(section, want) {
			t.Errorf("README's Go library section does not say %q", want)
		}
	}
}
