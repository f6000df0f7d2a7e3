package run

import (
	"bytes"
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
