package run

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/specs"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestPrinterTerminalAndGitHub(t *testing.T) {
	e := newEnv(t)
	sp := e.spec(`version: "0.2"
flows:
  main:
    input: {}
    steps:
      - {id: slow, intent: "slow", run: "sleep 0.5; echo 1"}
      - {id: bad, intent: "bad", run: "exit 2"}
`)
	out := &syncBuf{}
	o := e.start(sp, "main", nil, func(o *Options) { o.Progress = &Printer{W: out, Terminal: true, GitHub: true} })
	wantStatus(t, o, EndFailed, 1)
	s := out.String()
	for _, want := range []string{
		"\r\033[K▸ slow  ",    // the live line, redrawn with the elapsed time
		"✓ slow (1 attempt, ", // replaced by the result line
		"✗ bad failed after 1 attempt: command exited with status 2",
		"::error file=" + sp.File + ",line=7,title=stratum run::step bad failed: command exited with status 2",
		"stratum: flow " + o.FlowID + " failed after",
		"::error file=" + sp.File + ",line=7,title=stratum run::flow " + o.FlowID + " failed: Step 'bad' exhausted all retries",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%q", want, s)
		}
	}
	if strings.Count(s, "▸ slow") < 2 {
		t.Errorf("the live line was not refreshed:\n%q", s)
	}
}

func TestGitHubEscaping(t *testing.T) {
	if got := ghData("50% done\nnext"); got != "50%25 done%0Anext" {
		t.Fatal(got)
	}
	if got := ghProp("a:b,c"); got != "a%3Ab%2Cc" {
		t.Fatal(got)
	}
}

// rawControl returns the first control character of s other than a line
// break (the only one the progress output may contain raw).
func rawControl(s string) (rune, bool) {
	for _, r := range s {
		if r != '\n' && (r < 0x20 || (r >= 0x7f && r <= 0x9f)) {
			return r, true
		}
	}
	return 0, false
}

// A step whose stderr (its violation) and output carry terminal escape
// sequences, NUL and C1 characters: the progress lines and the gate
// console show them escaped, never raw.
func TestPrinterEscapesUntrustedText(t *testing.T) {
	e := newEnv(t)
	sp := e.spec(`version: "0.2"
functions:
  approval:
    mode: gate
flows:
  main:
    input: {}
    steps:
      - id: noisy
        intent: x
        run: "printf '%s' '{\"v\": \"\\u001b]0;pwned\\u0007\\u009b\"}'"
      - id: review
        function: approval
        depends_on: [noisy]
        on_approve: bad
        on_revise: noisy
        on_kill: bad
      - id: bad
        intent: x
        depends_on: [review]
        retries: 2
        run: "printf 'boom \\033[2J\\033[31mred\\000nul \\302\\233c1 \\177del\\n' >&2; exit 1"
`)
	var shown bytes.Buffer
	c := &review.Console{In: strings.NewReader("approve\nok\n"), Out: &shown}
	o := e.start(sp, "main", nil, func(o *Options) {
		o.Gates.OnGate = review.OnGatePrompt
		o.Console = c
	})
	wantStatus(t, o, EndFailed, ExitFailed)
	log := e.log.String()
	if !strings.Contains(log, `\x1b[2J`) || !strings.Contains(log, `\x00nul`) || !strings.Contains(log, `\x9bc1`) {
		t.Errorf("the violation is not shown escaped:\n%s", log)
	}
	if r, ok := rawControl(log); ok {
		t.Errorf("progress output has a raw %U:\n%q", r, log)
	}
	if !strings.Contains(shown.String(), "noisy") {
		t.Fatalf("the gate console did not show the outputs:\n%q\n%s", shown.String(), log)
	}
	if r, ok := rawControl(shown.String()); ok {
		t.Errorf("the gate console shows a raw %U:\n%q", r, shown.String())
	}
}

// TestStepDoneCost: a step's result line shows its cost only when it cost
// something, "cost ?" when it spent tokens at an unknown price, and no
// "$0.0000" for a step that cost nothing.
func TestStepDoneCost(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		name   string
		cost   *float64
		tokens int64
		want   string
	}{
		{"a command", f(0), 0, "(1 attempt, 0s)"},
		{"an agent CLI reporting no usage", nil, 0, "(1 attempt, 0s)"},
		{"a priced LLM call", f(0.0123), 900, "(1 attempt, 0s, $0.0123)"},
		{"a cheap LLM call", f(0.00001), 12, "(1 attempt, 0s, <$0.0001)"},
		{"tokens at an unknown price", nil, 900, "(1 attempt, 0s, cost ?)"},
	} {
		var out bytes.Buffer
		(&Printer{W: &out}).Event(Event{Kind: EventStepDone, FlowID: "f", Attempt: 1, CostUSD: tc.cost, Tokens: tc.tokens})
		if !strings.Contains(out.String(), tc.want) || strings.Contains(out.String(), "$0.0000") {
			t.Errorf("%s: %q, want %q", tc.name, out.String(), tc.want)
		}
	}
}

// A task id's newline stays in its progress line, escaped: it printed a
// forged line ("✓ build complete") of its own.
func TestTaskLineOneLine(t *testing.T) {
	var out bytes.Buffer
	step := &specs.Step{ID: "fan"}
	(&Printer{W: &out}).Event(Event{Kind: EventTask, FlowID: "f", Step: step, Status: "running",
		Message: "t1\n[0.1s] ✓ build complete\u202e running"})
	got := out.String()
	if strings.Count(got, "\n") != 1 || !strings.Contains(got, `t1\x0a[0.1s] ✓ build complete\u202e running`) {
		t.Fatalf("printed %q", got)
	}
}

var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata")

// TestProgressThroughRevise: the progress lines of a run whose gate is
// revised count each step's attempts one way — within the round, as its
// retries and STRATUM_ATTEMPT do — and name the round once a revise sent
// the flow back; decisions are named by who made them. Golden (times and
// the flow id masked).
func TestProgressThroughRevise(t *testing.T) {
	e := newEnv(t)
	sp := e.spec(`version: "0.2"
functions:
  approval:
    mode: gate
flows:
  main:
    input: {}
    max_rounds: 3
    steps:
      - id: build
        intent: "build"
        run: 'if [ "$STRATUM_ATTEMPT" = 1 ]; then echo "{\"ok\": false}"; else echo "{\"ok\": true}"; fi'
        ensure: ["result.ok == True"]
        retries: 3
      - id: review
        function: approval
        depends_on: [build]
        on_approve: ~
        on_revise: build
        on_kill: ~
`)
	var shown bytes.Buffer
	c := &review.Console{In: strings.NewReader("r\nadd tests\nr\nand docs\napprove\nfine\n"), Out: &shown, Reviewer: "ann"}
	o := e.start(sp, "main", nil, func(o *Options) { o.Gates.OnGate = review.OnGatePrompt; o.Console = c })
	wantStatus(t, o, EndComplete, 0)
	got := regexp.MustCompile(`\[\d+\.\ds\]`).ReplaceAllString(e.log.String(), "[T]")
	got = regexp.MustCompile(`, \d+(\.\d+)?(ms|µs|s)\)`).ReplaceAllString(got, ", D)")
	got = regexp.MustCompile(`after \d+\.\ds`).ReplaceAllString(got, "after T")
	got = strings.ReplaceAll(got, o.FlowID, "FLOW")
	path := filepath.Join("testdata", "progress_revise.golden")
	if *updateGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("progress through a revise:\n--- got ---\n%s--- want ---\n%s", got, want)
	}
	for _, bad := range []string{"attempt 3", "attempt 4", "4 attempts", "(console, human)"} {
		if strings.Contains(got, bad) {
			t.Errorf("the progress counts attempts across rounds or names no one (%q):\n%s", bad, got)
		}
	}
}

// Decisions are named by who made them, through what and why.
func TestDecisionText(t *testing.T) {
	for _, c := range []struct {
		d    review.Decision
		want string
	}{
		{review.Decision{Outcome: review.Approve, Channel: review.ChannelPolicy, ResolvedBy: review.System, Reviewer: "ann", Rationale: "approved by --approve all"}, "approved by --approve all (policy)"},
		{review.Decision{Outcome: review.Approve, Channel: review.ChannelPolicy, ResolvedBy: review.Human, Reviewer: "ann", Rationale: "approved by --approve review"}, "approved by --approve review (policy, ann)"},
		{review.Decision{Outcome: review.Kill, Channel: review.ChannelPolicy, ResolvedBy: review.System, Rationale: "killed by --on-gate kill"}, "killed by --on-gate kill (policy)"},
		{review.Decision{Outcome: review.Revise, Channel: review.ChannelCLI, Reviewer: "bob", Rationale: "needs work"}, "revised by bob (cli): needs work"},
		{review.Decision{Outcome: review.Approve, Channel: review.ChannelConsole, Reviewer: "ann"}, "approved by ann at the console"},
		{review.Decision{Outcome: review.Kill, Channel: review.ChannelTimeout, ResolvedBy: review.System}, "killed by the gate's timeout (on_timeout)"},
		{review.Decision{Outcome: review.Approve, Channel: review.ChannelTUI}, "approved by someone (tui)"},
	} {
		if got := decisionText(c.d); got != c.want {
			t.Errorf("decisionText(%+v) = %q, want %q", c.d, got, c.want)
		}
	}
}
