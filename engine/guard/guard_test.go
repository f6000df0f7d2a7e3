package guard

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/enginetest"
	"github.com/stratum-go/stratum/engine/internal/judge"
)

type env map[string]string

func newService(t *testing.T, e env) (*Service, string) {
	t.Helper()
	root := t.TempDir()
	return &Service{Store: enginetest.New(), Getenv: func(k string) string { return e[k] }, Channel: "test",
		Run: func(ctx context.Context, argv []string, dir string, _ time.Duration) (int, error) {
			switch argv[0] {
			case "true":
				return 0, nil
			case "false":
				return 1, nil
			case "git":
				if strings.HasPrefix(argv[4], "abc123") {
					return 0, nil
				}
				return 1, nil
			case "slow":
				time.Sleep(50 * time.Millisecond)
				return 0, nil
			}
			return -1, errors.New("no such command")
		}}, root
}

func pred(id, stmt string) Predicate {
	return Predicate{"id": id, "type": "deterministic", "statement": stmt}
}

func register(t *testing.T, s *Service, root string, preds map[string][]Predicate, stakes map[string]string) {
	t.Helper()
	resp, err := Answer(s.Register(context.Background(), RegisterRequest{ResourceID: "compose:FEAT-1",
		Graph: map[string][]string{"design": {"build"}, "build": {"review", "design"}, "review": {"done"}}, EdgePredicates: preds,
		Initial: "design", Terminal: []string{"done"}, Stakes: stakes, WorkspaceRoot: root}))
	if err != nil || resp["status"] != "registered" {
		t.Fatalf("register: %v %v", resp, err)
	}
}

func call[T any](t *testing.T, f func(context.Context, T) (engine.Response, error), in T) engine.Response {
	t.Helper()
	resp, err := Answer(f(context.Background(), in))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func expect(t *testing.T, what string, got engine.Response, want map[string]any) {
	t.Helper()
	for k, w := range want {
		g, _ := json.Marshal(got[k])
		ww, _ := json.Marshal(w)
		if string(g) != string(ww) {
			b, _ := json.Marshal(got)
			t.Fatalf("%s: %s = %s, want %s\n%s", what, k, g, ww, b)
		}
	}
}

// Registration validates the policy (fail-closed) and is immutable: the
// same policy again is "exists", another is refused.
func TestRegister(t *testing.T) {
	s, root := newService(t, env{})
	g := map[string][]string{"a": {"b"}}
	cases := []struct {
		name string
		in   RegisterRequest
		want string // error_type, or a status
	}{
		{"ok", RegisterRequest{ResourceID: "r1", Graph: g, Initial: "a", WorkspaceRoot: root}, "registered"},
		{"same again", RegisterRequest{ResourceID: "r1", Graph: g, Initial: "a", WorkspaceRoot: root}, "exists"},
		{"another policy", RegisterRequest{ResourceID: "r1", Graph: map[string][]string{"a": {"c"}}, Initial: "a"}, ErrAlreadyRegistered},
		{"bad state name", RegisterRequest{ResourceID: "r2", Graph: map[string][]string{"a b": {"c"}}, Initial: "a b"}, ErrInvalidStateName},
		{"initial not a node", RegisterRequest{ResourceID: "r2", Graph: g, Initial: "z"}, ErrInvalidStateName},
		{"unknown builtin", RegisterRequest{ResourceID: "r2", Graph: g, Initial: "a", WorkspaceRoot: root,
			EdgePredicates: map[string][]Predicate{"a->b": {pred("p", "server_file_exist('x')")}}}, ErrEvidenceParse},
		{"not a call", RegisterRequest{ResourceID: "r2", Graph: g, Initial: "a", WorkspaceRoot: root,
			EdgePredicates: map[string][]Predicate{"a->b": {pred("p", "__import__('os').system('x')")}}}, ErrEvidenceParse},
		{"unknown type", RegisterRequest{ResourceID: "r2", Graph: g, Initial: "a",
			EdgePredicates: map[string][]Predicate{"a->b": {{"statement": "x", "type": "vibes"}}}}, ErrEvidenceParse},
		{"no workspace", RegisterRequest{ResourceID: "r2", Graph: g, Initial: "a",
			EdgePredicates: map[string][]Predicate{"a->b": {pred("p", "server_file_exists('x')")}}}, ErrInvalidWorkspace},
		{"relative workspace", RegisterRequest{ResourceID: "r2", Graph: g, Initial: "a", WorkspaceRoot: "rel"}, ErrInvalidWorkspace},
		{"commands not allowed", RegisterRequest{ResourceID: "r2", Graph: g, Initial: "a", WorkspaceRoot: root,
			EdgePredicates: map[string][]Predicate{"a->b": {pred("p", "command_exit_zero(['true'])")}}}, ErrCommandsDisabled},
		{"paranoid without trusted evidence", RegisterRequest{ResourceID: "r2", Graph: g, Initial: "a",
			EdgePredicates: map[string][]Predicate{"a->b": {{"id": "v", "type": "verified", "statement": "it is good"}}},
			Stakes:         map[string]string{"a->b": "paranoid"}}, ErrParanoidNeedsTrust},
		{"empty id", RegisterRequest{Graph: g, Initial: "a"}, ErrInvalidArguments},
	}
	for _, c := range cases {
		resp, err := Answer(s.Register(context.Background(), c.in))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if resp["status"] != c.want && resp["error_type"] != c.want {
			t.Errorf("%s: %v, want %s", c.name, resp, c.want)
		}
	}
}

// Transitions: a legal edge whose predicates pass is applied, one whose
// predicate fails is refused and recorded, an illegal edge and a stale
// from state are refused without an entry; idempotent replay and conflict.
func TestTransition(t *testing.T) {
	s, root := newService(t, env{})
	register(t, s, root, map[string][]Predicate{
		"design->build": {pred("design_doc", "server_file_exists('docs/design.md')"), pred("commit", "git_commit_exists('abc123')")},
		"build->review": {{"id": "review", "type": "verified", "statement": "the build is reviewed"}},
	}, nil)
	tr := func(from, to, key string) engine.Response {
		return call(t, s.Transition, TransitionRequest{ResourceID: "compose:FEAT-1", FromState: from, ToState: to, IdempotencyKey: key})
	}
	r := tr("design", "build", "k1")
	expect(t, "missing doc", r, map[string]any{"status": "refused", "current_state": "design"})
	if v := r["verdict"].(map[string]any); v["met"] != false || len(v["predicates"].([]any)) != 2 {
		t.Fatalf("verdict %v", v)
	}
	if err := os.MkdirAll(filepath.Join(root, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "docs", "design.md"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	expect(t, "replay of the refused one", tr("design", "build", "k1"), map[string]any{"status": "replayed", "ledger_ref": r["ledger_ref"]})
	applied := tr("design", "build", "k2")
	expect(t, "applied", applied, map[string]any{"status": "applied", "current_state": "build"})
	expect(t, "replay", tr("design", "build", "k2"), map[string]any{"status": "replayed", "current_state": "build", "ledger_ref": applied["ledger_ref"]})
	expect(t, "conflict", tr("build", "review", "k2"), map[string]any{"status": "error", "error_type": ErrIdempotencyConflict})
	expect(t, "stale", tr("design", "build", ""), map[string]any{"error_type": ErrStaleFromState})
	expect(t, "illegal", tr("build", "done", ""), map[string]any{"error_type": ErrIllegalEdge})
	expect(t, "no verifier", tr("build", "review", ""), map[string]any{"status": "refused", "current_state": "build"})
	expect(t, "back", tr("build", "design", ""), map[string]any{"status": "applied", "current_state": "design"})
	h := call(t, s.History, HistoryRequest{ResourceID: "compose:FEAT-1"})
	expect(t, "history", h, map[string]any{"current_state": "design", "graph_version": 1})
	ledger := h["ledger"].([]Entry)
	var outcomes []string
	for _, e := range ledger {
		outcomes = append(outcomes, e.Outcome)
	}
	if strings.Join(outcomes, ",") != "refused,applied,refused,applied" || ledger[1].EntryDigest != applied["ledger_ref"] || ledger[1].Channel != "test" {
		t.Errorf("ledger: %v", outcomes)
	}
	expect(t, "unknown resource", call(t, s.History, HistoryRequest{ResourceID: "nope"}), map[string]any{"error_type": ErrNotFound})
}

// verdict_receipt_clean accepts an applied entry of the ledger, and
// command_exit_zero runs the command when commands are allowed.
func TestReceiptAndCommand(t *testing.T) {
	s, root := newService(t, env{EnvAllowCommands: "1"})
	register(t, s, root, map[string][]Predicate{
		"build->review":  {pred("tests", "command_exit_zero(['true', '-v'])")},
		"review->done":   {pred("receipt", "verdict_receipt_clean('RECEIPT')")},
		"design->build":  {pred("tests", "command_exit_zero([\"false\"])")},
		"build->design":  {},
		"design->design": {},
	}, nil)
	ctx := context.Background()
	r, _ := Answer(s.Transition(ctx, TransitionRequest{ResourceID: "compose:FEAT-1", FromState: "design", ToState: "build"}))
	expect(t, "false", r, map[string]any{"status": "refused"})
	s.Getenv = func(string) string { return "" }
	// With commands no longer allowed, the predicate is not met.
	r, _ = Answer(s.Transition(ctx, TransitionRequest{ResourceID: "compose:FEAT-1", FromState: "design", ToState: "build"}))
	if ev := r["verdict"].(map[string]any)["meta"].(map[string]any)["guard_evidence"].([]evidence); !strings.Contains(ev[0].Evidence, "disabled") {
		t.Errorf("evidence %v", ev)
	}
}

// Override needs the server's token, a human and a rationale, moves only
// legal edges, and is recorded as a deviation; migrate needs the token too
// and bumps the graph version.
func TestOverrideAndMigrate(t *testing.T) {
	s, root := newService(t, env{EnvOverrideToken: "sekrit"})
	register(t, s, root, map[string][]Predicate{"design->build": {pred("doc", "server_file_exists('nope.md')")}}, nil)
	ov := func(token, rationale, to string) engine.Response {
		return call(t, s.Override, OverrideRequest{ResourceID: "compose:FEAT-1", FromState: "design", ToState: to, OverrideToken: token, Rationale: rationale})
	}
	expect(t, "no token", ov("", "r", "build"), map[string]any{"error_type": ErrOverrideUnavailable, "message": "override token mismatch"})
	expect(t, "wrong token", ov("guess", "r", "build"), map[string]any{"error_type": ErrOverrideUnavailable})
	expect(t, "no rationale", ov("sekrit", " ", "build"), map[string]any{"error_type": ErrOverrideUnavailable})
	expect(t, "illegal", ov("sekrit", "r", "done"), map[string]any{"error_type": ErrIllegalEdge})
	expect(t, "agent", call(t, s.Override, OverrideRequest{ResourceID: "compose:FEAT-1", FromState: "design", ToState: "build",
		OverrideToken: "sekrit", Rationale: "r", ResolvedBy: "agent"}), map[string]any{"error_type": ErrOverrideUnavailable})
	expect(t, "override", ov("sekrit", "the doc is in the wiki", "build"), map[string]any{"status": "deviation", "current_state": "build", "rationale": "the doc is in the wiki"})
	mig := func(token string, g map[string][]string) engine.Response {
		return call(t, s.Migrate, MigrateRequest{ResourceID: "compose:FEAT-1", NewGraph: g, OverrideToken: token, Rationale: "add qa"})
	}
	expect(t, "migrate without token", mig("x", map[string][]string{"build": {"qa"}}), map[string]any{"error_type": ErrOverrideUnavailable})
	expect(t, "current state dropped", mig("sekrit", map[string][]string{"design": {"qa"}}), map[string]any{"error_type": ErrInvalidStateName})
	m := mig("sekrit", map[string][]string{"design": {"build"}, "build": {"qa"}, "qa": {"done"}})
	expect(t, "migrate", m, map[string]any{"status": "migrated", "graph_version": 2})
	expect(t, "new edge", call(t, s.Transition, TransitionRequest{ResourceID: "compose:FEAT-1", FromState: "build", ToState: "qa"}),
		map[string]any{"status": "applied", "current_state": "qa"})
	// Registering the old policy again is refused: the policy moved on.
	resp, _ := Answer(s.Register(context.Background(), RegisterRequest{ResourceID: "compose:FEAT-1", Graph: map[string][]string{"x": {"y"}}, Initial: "x"}))
	expect(t, "re-register", resp, map[string]any{"error_type": ErrAlreadyRegistered})
	s.Getenv = func(string) string { return "" }
	expect(t, "no server token", ov("sekrit", "r", "build"), map[string]any{"error_type": ErrOverrideUnavailable,
		"message": "override unavailable: STRATUM_GUARD_OVERRIDE_TOKEN not set in server env"})
}

// tamperStore changes what the store holds behind the guard's back.
type tamperStore struct {
	engine.Store
	entries func([][]byte) [][]byte
	reg     func([]byte) []byte
}

func (s tamperStore) View(ctx context.Context, fn func(engine.Tx) error) error {
	return s.Store.View(ctx, func(tx engine.Tx) error { return fn(tamperTx{tx, s}) })
}

func (s tamperStore) Update(ctx context.Context, fn func(engine.Tx) error) error {
	return s.Store.Update(ctx, func(tx engine.Tx) error { return fn(tamperTx{tx, s}) })
}

type tamperTx struct {
	engine.Tx
	s tamperStore
}

func (t tamperTx) GuardEntries(key string) ([][]byte, error) {
	es, err := t.Tx.GuardEntries(key)
	if t.s.entries != nil {
		es = t.s.entries(es)
	}
	return es, err
}

func (t tamperTx) GuardGet(key string) ([]byte, bool, error) {
	r, ok, err := t.Tx.GuardGet(key)
	if t.s.reg != nil && ok {
		r = t.s.reg(r)
	}
	return r, ok, err
}

// An edited ledger entry or a removed one is detected (history names the
// first broken link, transitions refuse); an edited policy is
// guard_tampered.
func TestTampering(t *testing.T) {
	s, root := newService(t, env{})
	register(t, s, root, nil, nil)
	for _, to := range []string{"build", "design", "build"} {
		from := map[string]string{"build": "design", "design": "build"}[to]
		call(t, s.Transition, TransitionRequest{ResourceID: "compose:FEAT-1", FromState: from, ToState: to})
	}
	clean := s.Store
	cases := []struct {
		name  string
		store tamperStore
		want  map[string]any
	}{
		{"edited outcome", tamperStore{Store: clean, entries: func(es [][]byte) [][]byte {
			es[1] = []byte(strings.Replace(string(es[1]), `"applied"`, `"refused"`, 1))
			return es
		}}, map[string]any{"error_type": ErrLedgerCorrupt, "first_broken": 1}},
		{"removed entry", tamperStore{Store: clean, entries: func(es [][]byte) [][]byte { return append(es[:1], es[2:]...) }},
			map[string]any{"error_type": ErrLedgerCorrupt, "first_broken": 1}},
		{"edited policy", tamperStore{Store: clean, reg: func(r []byte) []byte {
			return []byte(strings.Replace(string(r), `"review":["done"]`, `"review":["done","design"]`, 1))
		}}, map[string]any{"error_type": ErrTampered}},
	}
	for _, c := range cases {
		s.Store = c.store
		if c.name != "edited policy" {
			expect(t, c.name+": history", call(t, s.History, HistoryRequest{ResourceID: "compose:FEAT-1"}), c.want)
		}
		expect(t, c.name+": transition", call(t, s.Transition, TransitionRequest{ResourceID: "compose:FEAT-1", FromState: "build", ToState: "review"}), c.want)
	}
	s.Store = clean
	expect(t, "untouched", call(t, s.History, HistoryRequest{ResourceID: "compose:FEAT-1"}), map[string]any{"current_state": "build"})
}

// Two transitions of one resource at once (predicates slow enough for both
// to pass the first checks): exactly one is applied, the other is told the
// state moved.
func TestConcurrentTransitions(t *testing.T) {
	s, root := newService(t, env{EnvAllowCommands: "1"})
	register(t, s, root, map[string][]Predicate{"design->build": {pred("slow", "command_exit_zero(['slow'])")}}, nil)
	var wg sync.WaitGroup
	out := make([]engine.Response, 4)
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = call(t, s.Transition, TransitionRequest{ResourceID: "compose:FEAT-1", FromState: "design", ToState: "build"})
		}()
	}
	wg.Wait()
	applied := 0
	for _, r := range out {
		switch {
		case r["status"] == "applied":
			applied++
		case r["error_type"] != ErrStaleFromState:
			t.Errorf("loser: %v", r)
		}
	}
	if applied != 1 {
		t.Errorf("%d applied", applied)
	}
	h := call(t, s.History, HistoryRequest{ResourceID: "compose:FEAT-1"})
	if n := len(h["ledger"].([]Entry)); n != 1 {
		t.Errorf("%d entries", n)
	}
}

// The predicate parser takes one call of a builtin with literal arguments
// and nothing else.
func TestParseStatement(t *testing.T) {
	for stmt, want := range map[string]string{
		`server_file_exists('a/b.md')`:                 `server_file_exists ["a/b.md"]`,
		`server_file_exists("it's")`:                   `server_file_exists ["it's"]`,
		` command_exit_zero(['go', 'test', './...']) `: `command_exit_zero [["go","test","./..."]]`,
		`git_commit_exists('ab\'c',)`:                  `git_commit_exists ["ab'c"]`,
		`server_file_exists('a') or True`:              `error`,
		`server_file_exists(x)`:                        `error`,
		`os.system('x')`:                               `error`,
		`server_file_exists('a'`:                       `error`,
		`command_exit_zero([1])`:                       `error`,
		``:                                             `error`,
	} {
		name, args, err := parseStatement(stmt)
		got := "error"
		if err == nil {
			b, _ := json.Marshal(args)
			got = name + " " + string(b)
		}
		if got != want {
			t.Errorf("%q: %s, want %s", stmt, got, want)
		}
	}
}

// fakeVerifier answers every question with verdict, citing artifact
// report.txt line 1.
type fakeVerifier struct{ verdict string }

func (f fakeVerifier) Verify(_ context.Context, req judge.VerifyRequest) (judge.Answer, error) {
	b, _ := json.Marshal(map[string]any{"predicate_id": req.Predicate, "verdict": f.verdict, "confidence": 9, "reason": "read it",
		"evidence": []any{map[string]any{"source": "artifacts/report.txt:1", "quote": "all good", "tier": "T2"}}})
	return judge.Answer{Text: string(b), Agent: "fake"}, nil
}

// Predicates of the verifier tiers go to the judge: its verdict decides
// them (with the trusted ones), and its predicate results join the verdict.
func TestVerifiedPredicates(t *testing.T) {
	for _, c := range []struct {
		verdict, status string
	}{{"met", "applied"}, {"not_met", "refused"}} {
		s, root := newService(t, env{})
		s.Judge = &Judge{Root: t.TempDir(), Verifier: func(string) (judge.Verifier, error) { return fakeVerifier{c.verdict}, nil }}
		register(t, s, root, map[string][]Predicate{"design->build": {{"id": "review", "type": "verified", "statement": "the report says all good"}}}, nil)
		r := call(t, s.Transition, TransitionRequest{ResourceID: "compose:FEAT-1", FromState: "design", ToState: "build",
			Artifacts: map[string]string{"report": "all good\n"}})
		expect(t, c.verdict, r, map[string]any{"status": c.status})
		v := r["verdict"].(map[string]any)
		ps := v["predicates"].([]any)
		if len(ps) != 1 || ps[0].(map[string]any)["verdict"] != c.verdict || v["meta"].(map[string]any)["agent_type"] != "guard" {
			t.Errorf("%s: verdict %v", c.verdict, v)
		}
	}
}

// Verify (store check) names every damaged resource and its first broken
// link, and nothing for a sound store.
func TestVerify(t *testing.T) {
	s, root := newService(t, env{})
	register(t, s, root, nil, nil)
	for _, to := range []string{"build", "design"} {
		from := map[string]string{"build": "design", "design": "build"}[to]
		call(t, s.Transition, TransitionRequest{ResourceID: "compose:FEAT-1", FromState: from, ToState: to})
	}
	if p, err := Verify(context.Background(), s.Store); err != nil || len(p) != 0 {
		t.Fatalf("sound store: %v %v", p, err)
	}
	tampered := tamperStore{Store: s.Store, entries: func(es [][]byte) [][]byte {
		es[1] = []byte(strings.Replace(string(es[1]), `"design"`, `"review"`, 1))
		return es
	}}
	p, err := Verify(context.Background(), tampered)
	if err != nil || len(p) != 1 || !strings.Contains(p[0], `guard "compose:FEAT-1": ledger chain broken at entry 1`) {
		t.Errorf("tampered: %v %v", p, err)
	}
}
