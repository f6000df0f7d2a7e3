package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/enginetest"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
)

// count appends a line to the named file in the spec's directory.
func count(name string) string { return `echo x >> ` + name + `; ` }

func TestRetryCarriesOnlyThePreviousViolations(t *testing.T) {
	e := newEnv(t)
	sp := e.spec(`version: "0.2"
contracts:
  Out:
    n: {type: integer}
    seen: {type: string}
flows:
  main:
    input: {}
    steps:
      - id: s
        intent: "count"
        output_contract: Out
        retries: 3
        run: |
          ` + count("s.count") + `printf '{"n": %s, "seen": %s}' "$STRATUM_ATTEMPT" "$(printf '%s' "${STRATUM_VIOLATIONS:-none}" | sed 's/"/\\"/g; s/^/"/; s/$/"/')"
        ensure: ["result.n >= 3"]
`)
	o := e.start(sp, "main", nil)
	wantStatus(t, o, EndComplete, 0)
	out := o.Final.(*engine.Completion).Output.(map[string]any)
	if out["n"] != 3.0 || out["seen"] != `["ensure 'result.n >= 3' failed"]` {
		t.Fatalf("output %v", out)
	}
	if e.count("s.count") != 3 {
		t.Fatalf("ran %d times", e.count("s.count"))
	}
	if rep := o.Steps[0]; rep.Attempts != 3 || rep.Status != "passed" {
		t.Fatalf("report %+v", rep)
	}
}

const specFail = `version: "0.2"
contracts:
  Out:
    ok: {type: boolean}
flows:
  main:
    input: {}
    steps:
      - id: bad
        intent: "fails"
        retries: 2
        run: "` + `echo x >> bad.count; echo broken >&2; exit 7"
        output_contract: Out
        %ONFAIL%
      - id: fix
        intent: "fallback"
        run: "echo '{\"ok\": true}'"
        output_contract: Out
`

func TestExitFailureSpendsAttempts(t *testing.T) {
	t.Run("retries exhausted", func(t *testing.T) {
		e := newEnv(t)
		sp := e.spec(strings.Replace(specFail, "%ONFAIL%", "", 1))
		o := e.start(sp, "main", nil)
		wantStatus(t, o, EndFailed, 1)
		if e.count("bad.count") != 2 {
			t.Fatalf("ran %d", e.count("bad.count"))
		}
		rep := o.Steps[0]
		if rep.Status != "failed" || !strings.Contains(strings.Join(rep.Violations, ""), "exited with status 7; stderr: broken") {
			t.Fatalf("report %+v", rep)
		}
		if st := e.state(o.FlowID); st.Status != state.StatusFailed || st.Attempts["bad"] != 2 {
			t.Fatalf("state %s %v", st.Status, st.Attempts)
		}
		var junit bytes.Buffer
		if err := WriteJUnit(&junit, o); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{`<testcase name="bad"`, `<failure message="step bad failed after 2 attempt(s)"`, "exited with status 7", `<testcase name="fix"`, "<skipped"} {
			if !strings.Contains(junit.String(), want) {
				t.Errorf("junit lacks %q:\n%s", want, junit.String())
			}
		}
	})
	t.Run("on_fail", func(t *testing.T) {
		e := newEnv(t)
		sp := e.spec(strings.Replace(specFail, "%ONFAIL%", "on_fail: fix", 1))
		o := e.start(sp, "main", nil)
		wantStatus(t, o, EndComplete, 0)
		if o.Steps[0].Status != "failed" || o.Steps[1].Status != "passed" {
			t.Fatalf("reports %+v %+v", o.Steps[0], o.Steps[1])
		}
	})
}

const specGate = `version: "0.2"
contracts:
  Out:
    ok: {type: boolean}
functions:
  approval:
    mode: gate
    %APPROVER%
flows:
  main:
    input: {}
    max_rounds: 3
    steps:
      - id: work
        intent: "work"
        run: "` + `echo x >> work.count; printf '%s\\n' \"$STRATUM_REVISE_FEEDBACK\" >> feedback.log; echo '{\"ok\": true}'"
        output_contract: Out
      - id: review
        function: approval
        on_approve: done
        on_revise: work
        on_kill: cleanup
      - id: done
        intent: "finish"
        run: "echo '{\"ok\": true}'"
        output_contract: Out
      - id: cleanup
        intent: "cleanup"
        run: "` + `echo x >> cleanup.count; echo '{\"ok\": true}'"
        output_contract: Out
`

func gateSpec(approver string) string {
	return strings.Replace(specGate, "%APPROVER%", approver, 1)
}

func gateRecords(st *state.FlowState) []state.Record {
	var out []state.Record
	for _, rs := range append(st.Rounds, st.Records) {
		for _, r := range rs {
			if r.Type == state.RecordGate {
				out = append(out, r)
			}
		}
	}
	return out
}

func TestGateSinks(t *testing.T) {
	t.Run("approve all is a system policy decision", func(t *testing.T) {
		e := newEnv(t)
		o := e.start(e.spec(gateSpec("")), "main", nil, func(o *Options) { o.Gates.Approve = []string{"all"} })
		wantStatus(t, o, EndComplete, 0)
		g := gateRecords(e.state(o.FlowID))
		if len(g) != 1 || g[0].Outcome != "approve" || g[0].Channel != "policy" || g[0].ResolvedBy != "system" {
			t.Fatalf("gate records %+v", g)
		}
	})
	t.Run("approve all does not approve a human gate", func(t *testing.T) {
		e := newEnv(t)
		o := e.start(e.spec(gateSpec("approver: human")), "main", nil, func(o *Options) { o.Gates.Approve = []string{"all"} })
		wantStatus(t, o, EndGate, 4)
		if o.Gate == nil || o.Gate.StepID != "review" || !strings.Contains(o.Message, "stratum gate approve "+o.FlowID+" review") ||
			!strings.Contains(o.Message, "stratum run --resume "+o.FlowID) {
			t.Fatalf("gate stop: %+v %s", o.Gate, o.Message)
		}
	})
	t.Run("naming the gate approves it as a human", func(t *testing.T) {
		e := newEnv(t)
		o := e.start(e.spec(gateSpec("")), "main", nil, func(o *Options) { o.Gates.Approve = []string{"review"} })
		wantStatus(t, o, EndComplete, 0)
		if g := gateRecords(e.state(o.FlowID)); g[0].ResolvedBy != "human" || g[0].Channel != "policy" {
			t.Fatalf("gate records %+v", g)
		}
	})
	t.Run("naming a human gate needs a terminal and the confirmation", func(t *testing.T) {
		e := newEnv(t)
		o := e.start(e.spec(gateSpec("approver: human")), "main", nil, func(o *Options) { o.Gates.Approve = []string{"review"} })
		wantStatus(t, o, EndGate, 2)
		if g := gateRecords(e.state(o.FlowID)); len(g) != 0 || !strings.Contains(o.Message, "decided by a person") {
			t.Fatalf("gate records %+v, message %s", g, o.Message)
		}
		o = e.start(e.spec(gateSpec("approver: human")), "main", nil, func(o *Options) {
			o.Gates.Approve = []string{"review"}
			o.Gates.Human = review.HumanConfirm{Terminal: true, In: strings.NewReader("review\n"), Out: io.Discard}
		})
		wantStatus(t, o, EndComplete, 0)
		if g := gateRecords(e.state(o.FlowID)); g[0].ResolvedBy != "human" || g[0].Channel != "policy" {
			t.Fatalf("gate records %+v", g)
		}
	})
	t.Run("on-gate kill runs the cleanup and ends killed", func(t *testing.T) {
		e := newEnv(t)
		o := e.start(e.spec(gateSpec("")), "main", nil, func(o *Options) { o.Gates.OnGate = review.OnGateKill })
		wantStatus(t, o, EndKilled, 3)
		if e.count("cleanup.count") != 1 {
			t.Fatal("cleanup did not run")
		}
	})
	t.Run("exit then decide elsewhere then resume", func(t *testing.T) {
		e := newEnv(t)
		o := e.start(e.spec(gateSpec("")), "main", nil)
		wantStatus(t, o, EndGate, 4)
		if st := e.state(o.FlowID); st.Owner != nil {
			t.Fatalf("lease not released: %+v", st.Owner)
		}
		resp, err := e.svc.GateResolve(context.Background(), o.FlowID, review.Decision{StepID: "review", Outcome: review.Approve, ResolvedBy: review.Human, Channel: review.ChannelCLI})
		if err != nil {
			t.Fatalf("resolve: %v %v", resp, err)
		}
		o2, err := e.runner().Resume(context.Background(), o.FlowID)
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, o2, EndComplete, 0)
		if e.count("work.count") != 1 {
			t.Fatalf("work ran %d times", e.count("work.count"))
		}
	})
	t.Run("wait for another process", func(t *testing.T) {
		e := newEnv(t)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; i < 500; i++ {
				time.Sleep(10 * time.Millisecond)
				ps, _ := e.svc.Query().PendingReviews(context.Background())
				if len(ps) == 1 {
					_, _ = e.svc.GateResolve(context.Background(), ps[0].FlowID, review.Decision{StepID: "review", Outcome: review.Approve, ResolvedBy: review.Human, Channel: review.ChannelTUI})
					return
				}
			}
		}()
		o := e.start(e.spec(gateSpec("")), "main", nil, func(o *Options) { o.Gates.OnGate = review.OnGateWait })
		<-done
		wantStatus(t, o, EndComplete, 0)
		if g := gateRecords(e.state(o.FlowID)); g[0].Channel != "tui" {
			t.Fatalf("gate records %+v", g)
		}
	})
	t.Run("wait until the deadline applies on_timeout", func(t *testing.T) {
		e := newEnv(t)
		sp := e.spec(gateSpec("timeout: 1\n    on_timeout: approve"))
		o := e.start(sp, "main", nil, func(o *Options) { o.Gates.OnGate = review.OnGateWait })
		wantStatus(t, o, EndComplete, 0)
		if g := gateRecords(e.state(o.FlowID)); g[0].Channel != "timeout" {
			t.Fatalf("gate records %+v", g)
		}
	})
	t.Run("console revise then approve", func(t *testing.T) {
		e := newEnv(t)
		var shown bytes.Buffer
		c := &review.Console{In: strings.NewReader("maybe\nr\nneeds work\napprove\nfine\n"), Out: &shown}
		o := e.start(e.spec(gateSpec("")), "main", nil, func(o *Options) { o.Gates.OnGate = review.OnGatePrompt; o.Console = c })
		wantStatus(t, o, EndComplete, 0)
		g := gateRecords(e.state(o.FlowID))
		if len(g) != 2 || g[0].Outcome != "revise" || g[0].Rationale != "needs work" || g[1].Outcome != "approve" ||
			g[1].Channel != "console" || g[1].ResolvedBy != "human" {
			t.Fatalf("gate records %+v", g)
		}
		if e.count("work.count") != 2 {
			t.Fatalf("work ran %d times", e.count("work.count"))
		}
		// The revise reached the worker: the rerun saw the decision.
		fb, _ := os.ReadFile(filepath.Join(e.dir, "feedback.log"))
		lines := strings.Split(strings.TrimRight(string(fb), "\n"), "\n")
		if len(lines) != 2 || lines[0] != "" {
			t.Fatalf("feedback.log:\n%s", fb)
		}
		var got engine.ReviseFeedback
		if err := json.Unmarshal([]byte(lines[1]), &got); err != nil || got != (engine.ReviseFeedback{Gate: "review", Round: 0, Rationale: "needs work", Reviewer: got.Reviewer, Channel: "console"}) {
			t.Fatalf("STRATUM_REVISE_FEEDBACK %q: %+v %v", lines[1], got, err)
		}
		if !strings.Contains(shown.String(), "please answer one of") || !strings.Contains(shown.String(), `work: {"ok":true}`) {
			t.Fatalf("console output:\n%s", shown.String())
		}
	})
}

func TestBudgets(t *testing.T) {
	t.Run("flow ms", func(t *testing.T) {
		e := newEnv(t)
		sp := e.spec(`version: "0.2"
flows:
  main:
    input: {}
    budget: {ms: 250}
    steps:
      - {id: a, intent: "a", run: "sleep 0.15; echo 1"}
      - {id: b, intent: "b", run: "sleep 0.15; echo 2"}
      - {id: c, intent: "c", run: "` + count("c.count") + `echo 3"}
`)
		o := e.start(sp, "main", nil)
		wantStatus(t, o, EndBudget, 5)
		if e.count("c.count") != 0 {
			t.Fatal("c ran")
		}
		st := e.state(o.FlowID)
		if st.Status != state.StatusBudgetExhausted || st.BudgetState == nil || st.BudgetState.SpentMS < 250 {
			t.Fatalf("state %s %+v", st.Status, st.BudgetState)
		}
	})
	t.Run("step ms times out the command, then the call is out of time", func(t *testing.T) {
		e := newEnv(t)
		sp := e.spec(`version: "0.2"
flows:
  main:
    input: {}
    steps:
      - {id: a, intent: "a", retries: 3, budget: {ms: 200}, run: "sleep 5; echo 1"}
`)
		start := time.Now()
		o := e.start(sp, "main", nil)
		wantStatus(t, o, EndBudget, 5)
		if time.Since(start) > 3*time.Second {
			t.Fatal("the command was not killed")
		}
		if st := e.state(o.FlowID); st.Attempts["a"] != 0 || st.BudgetState.SpentMS < 200 {
			t.Fatalf("attempts %v ledger %+v", st.Attempts, st.BudgetState)
		}
	})
	t.Run("flow usd stops the next infer call", func(t *testing.T) {
		e := newEnv(t)
		sp := e.spec(`version: "0.2"
flows:
  main:
    input: {}
    budget: {usd: 1.0}
    steps:
      - {id: a, intent: "a"}
      - {id: b, intent: "b"}
      - {id: c, intent: "c"}
`)
		var calls atomic.Int32
		var views []engine.BudgetView
		infer := enginetest.ExecutorFunc(func(ctx context.Context, req engine.StepRequest) (engine.StepOutcome, error) {
			calls.Add(1)
			views = append(views, req.Budget)
			c := 0.6
			return engine.StepOutcome{Output: map[string]any{"ok": true}, CostUSD: &c, Usage: state.Usage{InputTokens: 10, OutputTokens: 5}}, nil
		})
		o := e.start(sp, "main", nil, func(o *Options) { o.Infer = infer })
		wantStatus(t, o, EndBudget, 5)
		if calls.Load() != 2 {
			t.Fatalf("calls %d", calls.Load())
		}
		if views[0].USD == nil || *views[0].USD != 1.0 || views[1].USD == nil || *views[1].USD > 0.41 {
			t.Fatalf("views %+v %+v", views[0], views[1])
		}
		st := e.state(o.FlowID)
		if st.BudgetState.SpentTokens != 30 || st.BudgetState.SpentUSD < 1.19 {
			t.Fatalf("ledger %+v", st.BudgetState)
		}
	})
	t.Run("executor budget error", func(t *testing.T) {
		e := newEnv(t)
		sp := e.spec(`version: "0.2"
flows:
  main:
    input: {}
    steps:
      - {id: a, intent: "a"}
`)
		infer := enginetest.ExecutorFunc(func(ctx context.Context, req engine.StepRequest) (engine.StepOutcome, error) {
			return engine.StepOutcome{}, errors.Join(errors.New("estimated cost over budget"), engine.ErrBudgetExhausted)
		})
		o := e.start(sp, "main", nil, func(o *Options) { o.Infer = infer })
		wantStatus(t, o, EndBudget, 5)
	})
}

func TestInferExecutorWiring(t *testing.T) {
	src := `version: "0.2"
contracts:
  Out:
    label: {type: string}
flows:
  main:
    input: {text: {type: string}}
    steps:
      - id: classify
        intent: "classify {text}"
        inputs: {text: "$.input.text"}
        output_contract: Out
        retries: 3
        ensure: ["result.label == 'good'"]
`
	t.Run("no provider", func(t *testing.T) {
		e := newEnv(t)
		o := e.start(e.spec(src), "main", map[string]any{"text": "x"}, func(o *Options) { o.InferUnavailable = "set STRATUM_MODEL" })
		wantStatus(t, o, EndError, 1)
		if !strings.Contains(o.Message, "no provider is configured: set STRATUM_MODEL") {
			t.Fatal(o.Message)
		}
		if st := e.state(o.FlowID); st.Status != state.StatusRunning || st.Attempts["classify"] != 0 {
			t.Fatalf("state %s %v", st.Status, st.Attempts)
		}
	})
	t.Run("parse failure then ensure failure then success", func(t *testing.T) {
		e := newEnv(t)
		var got [][]string
		infer := enginetest.ExecutorFunc(func(ctx context.Context, req engine.StepRequest) (engine.StepOutcome, error) {
			got = append(got, req.Violations)
			cost := 0.001
			tr := &state.TraceRecord{Function: req.Step.ID, Model: "fake/model", Attempts: req.Attempt, StepID: req.Step.ID, Attempt: req.Attempt}
			switch req.Attempt {
			case 1:
				return engine.StepOutcome{}, &engine.AttemptError{Kind: engine.AttemptParse, Violations: []string{"could not parse JSON"}}
			case 2:
				return engine.StepOutcome{Output: map[string]any{"label": "bad"}, CostUSD: &cost, Trace: tr}, nil
			}
			return engine.StepOutcome{Output: map[string]any{"label": "good"}, CostUSD: &cost, Trace: tr}, nil
		})
		o := e.start(e.spec(src), "main", map[string]any{"text": "x"}, func(o *Options) { o.Infer = infer })
		wantStatus(t, o, EndComplete, 0)
		want := [][]string{nil, {"could not parse JSON"}, {"ensure 'result.label == 'good'' failed"}}
		b1, _ := json.Marshal(got)
		b2, _ := json.Marshal(want)
		if string(b1) != string(b2) {
			t.Fatalf("violations %s, want %s", b1, b2)
		}
		st := e.state(o.FlowID)
		if len(st.Trace) != 2 || st.Attempts["classify"] != 3 {
			t.Fatalf("trace %d attempts %v", len(st.Trace), st.Attempts)
		}
	})
}

func TestGlobalCacheIsRecheckedByEnsures(t *testing.T) {
	e := newEnv(t)
	sp := e.spec(`version: "0.2"
contracts:
  Out:
    n: {type: integer}
functions:
  compute:
    mode: compute
    intent: "compute"
    input: {x: {type: integer}}
    output: Out
    cache: true
    retries: 2
    run: "` + count("compute.count") + `echo '{\"n\": 5}'"
    ensure: ["result.n == 5"]
flows:
  main:
    input: {}
    steps:
      - {id: a, function: compute, inputs: {x: "1"}}
`)
	global := func(o *Options) { o.Cache = CacheGlobal }
	o := e.start(sp, "main", nil, global)
	wantStatus(t, o, EndComplete, 0)
	o = e.start(sp, "main", nil, global)
	wantStatus(t, o, EndComplete, 0)
	if e.count("compute.count") != 1 || !o.Steps[0].CacheHit {
		t.Fatalf("ran %d times, cache hit %v", e.count("compute.count"), o.Steps[0].CacheHit)
	}
	// Poison the entry: the hit must fail the ensure and the retry runs the command.
	var keys int
	_ = e.store.Update(context.Background(), func(tx engine.Tx) error {
		r := New(Options{Service: e.svc, Cache: CacheGlobal})
		fc := &flowCtx{spec: sp, flow: sp.Flows["main"]}
		k := r.cacheKey(fc, sp.Flows["main"].Steps[0], execCommand, map[string]any{"x": "1"})
		if _, ok, _ := tx.CacheGet(k); ok {
			keys++
		}
		return tx.CachePut(k, []byte(`{"n": 4}`))
	})
	if keys != 1 {
		t.Fatal("cache key not found")
	}
	o = e.start(sp, "main", nil, global)
	wantStatus(t, o, EndComplete, 0)
	if e.count("compute.count") != 2 || o.Steps[0].Attempts != 2 {
		t.Fatalf("ran %d times, attempts %d", e.count("compute.count"), o.Steps[0].Attempts)
	}
	// Session caches do not outlive the flow.
	o = e.start(sp, "main", nil)
	wantStatus(t, o, EndComplete, 0)
	if e.count("compute.count") != 3 {
		t.Fatalf("ran %d times", e.count("compute.count"))
	}
}

func TestChildFlowRunsInProcess(t *testing.T) {
	e := newEnv(t)
	sp := e.spec(`version: "0.2"
contracts:
  Out:
    v: {type: string}
flows:
  child:
    input: {word: {type: string}}
    steps:
      - id: up
        intent: "upper"
        inputs: {word: "$.input.word"}
        run: "printf '{\"v\": \"%s!\"}' \"$STRATUM_INPUT_WORD\""
        output_contract: Out
  main:
    input: {}
    steps:
      - id: sub
        flow: child
        inputs: {word: "hi"}
      - id: after
        intent: "after"
        inputs: {v: "$.steps.sub.output.v"}
        run: "printf '{\"v\": \"%s?\"}' \"$STRATUM_INPUT_V\""
        output_contract: Out
`)
	o := e.start(sp, "main", nil)
	wantStatus(t, o, EndComplete, 0)
	if out := o.Final.(*engine.Completion).Output.(map[string]any); out["v"] != "hi!?" {
		t.Fatalf("output %v", out)
	}
	st := e.state(o.FlowID)
	if len(st.ChildAudits["sub"]) != 1 {
		t.Fatalf("child audits %v", st.ChildAudits)
	}
}

func TestLeaseRefusesAgentReportsWhileRunning(t *testing.T) {
	e := newEnv(t)
	sp := e.spec(`version: "0.2"
flows:
  main:
    input: {}
    steps:
      - id: wait
        intent: "wait for the go file"
        run: "touch started; while [ ! -f go ]; do sleep 0.02; done; echo 1"
`)
	type res struct {
		o   *Outcome
		err error
	}
	ch := make(chan res, 1)
	r := e.runner()
	go func() {
		o, err := r.Start(context.Background(), sp, "main", nil)
		ch <- res{o, err}
	}()
	for i := 0; ; i++ {
		if _, err := os.Stat(filepath.Join(e.dir, "started")); err == nil {
			break
		}
		if i > 500 {
			t.Fatal("step never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	flows, _ := e.svc.Query().List(context.Background(), engine.ListFilter{})
	resp, err := e.svc.StepDone(context.Background(), engine.StepReport{FlowID: flows[0].FlowID, StepID: "wait", Result: 1})
	if e := engine.AsError(err); e == nil || e.Type != engine.ErrTypeFlowOwned {
		t.Fatalf("agent report: %v %v", resp, err)
	}
	if err := os.WriteFile(filepath.Join(e.dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got := <-ch
	if got.err != nil {
		t.Fatal(got.err)
	}
	wantStatus(t, got.o, EndComplete, 0)
	if st := e.state(got.o.FlowID); st.Owner != nil || st.Driver != state.DriverRunner {
		t.Fatalf("owner %+v driver %s", st.Owner, st.Driver)
	}
}

func TestResumeRefusesALiveLeaseAndTakesOverADeadOne(t *testing.T) {
	e := newEnv(t)
	sp := e.spec(gateSpec(""))
	o := e.start(sp, "main", nil)
	wantStatus(t, o, EndGate, 4)
	host, _ := os.Hostname()
	set := func(l state.Lease) {
		_ = e.store.Update(context.Background(), func(tx engine.Tx) error {
			st, _ := tx.Get(o.FlowID)
			st.Owner = &l
			expect := st.Stamp(time.Now())
			return tx.Put(st, engine.Summarize(st, nil), expect)
		})
	}
	// A live lease of a live process (this one) is refused.
	set(state.Lease{ID: "other", PID: os.Getpid(), Host: host, ExpiresAt: time.Now().Add(time.Hour)})
	o2, err := e.runner().Resume(context.Background(), o.FlowID)
	if err != nil {
		t.Fatal(err)
	}
	if o2.ExitCode != 1 || !strings.Contains(o2.Message, "owned by another live lease") {
		t.Fatalf("outcome %+v", o2)
	}
	// A live lease of a process that is gone is taken over.
	set(state.Lease{ID: "dead", PID: 1 << 22, Host: host, ExpiresAt: time.Now().Add(time.Hour)})
	o3, err := e.runner(func(o *Options) { o.Gates.Approve = []string{"all"} }).Resume(context.Background(), o.FlowID)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, o3, EndComplete, 0)
	if e.count("work.count") != 1 {
		t.Fatalf("work ran %d times", e.count("work.count"))
	}
}

func TestInterruptLeavesAResumableFlow(t *testing.T) {
	e := newEnv(t)
	sp := e.spec(`version: "0.2"
flows:
  main:
    input: {}
    steps:
      - {id: a, intent: "a", run: "` + count("a.count") + `echo 1"}
      - {id: b, intent: "b", run: "` + count("b.count") + `if [ ! -f fast ]; then touch started; sleep 10; fi; echo 2"}
      - {id: c, intent: "c", run: "` + count("c.count") + `echo 3"}
`)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for i := 0; i < 500; i++ {
			if _, err := os.Stat(filepath.Join(e.dir, "started")); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	o, err := e.runner().Start(ctx, sp, "main", nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, o, EndInterrupted, 130)
	if st := e.state(o.FlowID); st.Owner != nil || st.Status != state.StatusRunning || st.Attempts["b"] != 0 {
		t.Fatalf("state %s owner %+v attempts %v", st.Status, st.Owner, st.Attempts)
	}
	if err := os.WriteFile(filepath.Join(e.dir, "fast"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	o2, err := e.runner().Resume(context.Background(), o.FlowID)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, o2, EndComplete, 0)
	// a's completion was recorded: it never runs again; b was cut short.
	if a, b, c := e.count("a.count"), e.count("b.count"), e.count("c.count"); a != 1 || b != 2 || c != 1 {
		t.Fatalf("runs a=%d b=%d c=%d", a, b, c)
	}
}

func TestConsoleWithoutAnswerStopsAtTheGate(t *testing.T) {
	e := newEnv(t)
	var shown bytes.Buffer
	c := &review.Console{In: strings.NewReader(""), Out: &shown}
	o := e.start(e.spec(gateSpec("")), "main", nil, func(o *Options) { o.Gates.OnGate = review.OnGatePrompt; o.Console = c })
	wantStatus(t, o, EndGate, 4)
	if !strings.Contains(o.Message, "reading the gate decision: EOF") {
		t.Fatal(o.Message)
	}
}
