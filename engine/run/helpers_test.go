package run

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/specs/exprlang"

	"github.com/stratum-go/stratum/engine/enginetest"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs"
)

// env is a runner test environment: an in-memory store and a spec written
// into a temp dir (commands run there).
type env struct {
	t     testing.TB
	dir   string
	store *enginetest.Store
	svc   *engine.Service
	log   *bytes.Buffer
}

func newEnv(t testing.TB) *env {
	t.Helper()
	t.Setenv("STRATUM_HOME", t.TempDir())
	st := enginetest.New()
	return &env{t: t, dir: t.TempDir(), store: st, svc: &engine.Service{ParseSpec: exprlang.ParseSpec, Store: st}, log: &bytes.Buffer{}}
}

// spec writes src as a spec file and parses it.
func (e *env) spec(src string) *specs.Spec {
	e.t.Helper()
	p := filepath.Join(e.dir, "test.stratum.yaml")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		e.t.Fatal(err)
	}
	sp, ds := specs.Parse(p, []byte(src), exprlang.Compile)
	if sp == nil || ds.HasErrors() {
		e.t.Fatalf("spec: %s", ds.Error())
	}
	return sp
}

func (e *env) runner(mod ...func(*Options)) *Runner {
	o := Options{Service: e.svc, Progress: &Printer{W: e.log}}
	for _, m := range mod {
		m(&o)
	}
	return New(o)
}

func (e *env) start(sp *specs.Spec, flow string, inputs map[string]any, mod ...func(*Options)) *Outcome {
	e.t.Helper()
	out, err := e.runner(mod...).Start(context.Background(), sp, flow, inputs)
	if err != nil {
		e.t.Fatalf("run: %v\n%s", err, e.log)
	}
	return out
}

func (e *env) state(id string) *state.FlowState {
	e.t.Helper()
	st, err := e.svc.Query().Get(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return st
}

// count reads a counter file a command appends to (one line per run).
func (e *env) count(name string) int {
	b, err := os.ReadFile(filepath.Join(e.dir, name))
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "\n")
}

func wantStatus(t *testing.T, o *Outcome, status string, code int) {
	t.Helper()
	if o.Status != status || o.ExitCode != code {
		t.Fatalf("outcome %s (exit %d), want %s (exit %d): %s\nfinal: %v", o.Status, o.ExitCode, status, code, o.Message, o.Final)
	}
}

type (
	stepReq = engine.StepRequest
	stepOut = engine.StepOutcome
)

// execFunc adapts a function to engine.Executor.
type execFunc = enginetest.ExecutorFunc
