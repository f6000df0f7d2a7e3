package review

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	base := Decision{StepID: "g", ResolvedBy: Human}
	cases := []struct {
		name    string
		outcome Outcome
		note    string
		channel Channel
		by      ResolvedBy
		want    error // nil, ErrRationaleRequired, or errAny
	}{
		{"approve without rationale", Approve, "", ChannelTUI, Human, nil},
		{"revise with rationale", Revise, "tests missing", ChannelTUI, Human, nil},
		{"revise without rationale (tui)", Revise, "", ChannelTUI, Human, ErrRationaleRequired},
		{"kill without rationale (cli)", Kill, "  ", ChannelCLI, Human, ErrRationaleRequired},
		{"kill without rationale (console)", Kill, "", ChannelConsole, Human, ErrRationaleRequired},
		{"revise without rationale over MCP", Revise, "", ChannelMCP, Agent, nil},
		{"kill without rationale over MCP", Kill, "", ChannelMCP, Agent, nil},
		// Validity of the outcome and resolved_by is the recorder's (the
		// engine's, with the original's messages), not Check's.
		{"bad outcome is the recorder's", "reject", "x", ChannelCLI, Human, nil},
		{"bad resolved_by is the recorder's", Approve, "", ChannelCLI, "robot", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := base
			d.Outcome, d.Rationale, d.Channel, d.ResolvedBy = c.outcome, c.note, c.channel, c.by
			err := Check(d)
			switch {
			case c.want == nil && err != nil:
				t.Fatalf("Check = %v, want nil", err)
			case c.want == errAny && err == nil:
				t.Fatal("Check = nil, want an error")
			case c.want != nil && c.want != errAny && !errors.Is(err, c.want):
				t.Fatalf("Check = %v, want %v", err, c.want)
			}
		})
	}
}

var errAny = errors.New("any error")

func TestPolicy(t *testing.T) {
	any := PendingReview{StepID: "review", Approver: AnyApprover}
	human := PendingReview{StepID: "review", Approver: HumanApprover}
	cases := []struct {
		name   string
		p      Policy
		r      PendingReview
		want   Outcome // "" = pass
		wantBy ResolvedBy
	}{
		{"named gate is a human approval", Policy{Approve: []string{"review"}}, any, Approve, Human},
		{"named human gate on a terminal, confirmed", Policy{Approve: []string{"review"},
			Human: HumanConfirm{Terminal: true, In: strings.NewReader("review\n"), Out: io.Discard}}, human, Approve, Human},
		{"all approves any-approver gates", Policy{Approve: []string{"all"}}, any, Approve, System},
		{"all never approves human gates", Policy{Approve: []string{"all"}}, human, "", ""},
		{"other gate named: pass", Policy{Approve: []string{"deploy"}}, any, "", ""},
		{"on-gate approve", Policy{OnGate: OnGateApprove}, any, Approve, System},
		{"on-gate approve skips human gates", Policy{OnGate: OnGateApprove}, human, "", ""},
		{"on-gate kill", Policy{OnGate: OnGateKill}, human, Kill, System},
		{"on-gate exit passes", Policy{OnGate: OnGateExit}, any, "", ""},
		{"on-gate wait passes", Policy{OnGate: OnGateWait}, any, "", ""},
	}
	// --approve GATE on an approver: human gate is typed by whoever runs
	// the command: without a terminal, or without the confirmation,
	// nothing is decided.
	for _, c := range []struct {
		name string
		h    HumanConfirm
		want error
	}{
		{"no terminal", HumanConfirm{In: strings.NewReader("review\n"), Out: io.Discard}, ErrNeedsTerminal},
		{"not confirmed", HumanConfirm{Terminal: true, In: strings.NewReader("yes\n"), Out: io.Discard}, ErrNotConfirmed},
		{"endless input", HumanConfirm{Terminal: true, In: endless{}, Out: io.Discard}, ErrNotConfirmed},
	} {
		p := Policy{Approve: []string{"review"}, Human: c.h}
		if d, err := p.Handle(context.Background(), human); !errors.Is(err, c.want) || d.Outcome != "" {
			t.Errorf("%s: got %+v %v, want %v", c.name, d, err, c.want)
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := c.p.Handle(context.Background(), c.r)
			if c.want == "" {
				if !errors.Is(err, ErrPass) {
					t.Fatalf("got %+v %v, want a pass", d, err)
				}
				return
			}
			if err != nil || d.Outcome != c.want || d.ResolvedBy != c.wantBy || d.Channel != ChannelPolicy || d.Rationale == "" {
				t.Fatalf("got %+v %v", d, err)
			}
			if Check(Decision{StepID: "review", Outcome: d.Outcome, ResolvedBy: d.ResolvedBy, Channel: d.Channel, Rationale: d.Rationale}) != nil {
				t.Fatal("a policy decision must pass Check")
			}
		})
	}
}

// recorder is a Decider that records what it is given.
type recorder struct {
	got []Decision
	err error
}

func (r *recorder) Decide(_ context.Context, d Decision) (string, error) {
	if r.err != nil {
		return "", r.err
	}
	r.got = append(r.got, d)
	return "next:" + string(d.Outcome), nil
}

func TestServiceRequest(t *testing.T) {
	ctx := context.Background()
	r := PendingReview{ReviewID: "f/g/2", FlowID: "f", StepID: "g", Round: 2}
	pass := HandlerFunc(func(context.Context, PendingReview) (Decision, error) { return Decision{}, ErrPass })
	kill := HandlerFunc(func(context.Context, PendingReview) (Decision, error) {
		return Decision{Outcome: Kill, ResolvedBy: Human, Channel: ChannelTUI, Rationale: "broken"}, nil
	})
	never := HandlerFunc(func(context.Context, PendingReview) (Decision, error) {
		t.Fatal("asked after a decision")
		return Decision{}, nil
	})

	rec := &recorder{}
	d, next, err := NewService[string](rec, pass, kill, never).Request(ctx, r)
	if err != nil || next != "next:kill" || len(rec.got) != 1 {
		t.Fatalf("%+v %q %v", d, next, err)
	}
	got := rec.got[0]
	if got.FlowID != "f" || got.StepID != "g" || got.ReviewID != "f/g/2" || got.Round == nil || *got.Round != 2 {
		t.Fatalf("the decision is not tied to the review: %+v", got)
	}

	if _, _, err := NewService[string](rec, pass, pass).Request(ctx, r); !errors.Is(err, ErrNoReviewer) {
		t.Fatalf("all passed: %v", err)
	}

	elsewhere := HandlerFunc(func(context.Context, PendingReview) (Decision, error) {
		return Decision{Outcome: Approve, Reviewer: "carol"}, ErrDecidedElsewhere
	})
	rec = &recorder{}
	d, _, err = NewService[string](rec, elsewhere).Request(ctx, r)
	if !errors.Is(err, ErrDecidedElsewhere) || d.Reviewer != "carol" || len(rec.got) != 0 {
		t.Fatalf("decided elsewhere: %+v %v (recorded %d)", d, err, len(rec.got))
	}

	// The rules hold on every channel: a revise without rationale from a
	// handler is refused before it reaches the recorder.
	lazy := HandlerFunc(func(context.Context, PendingReview) (Decision, error) {
		return Decision{Outcome: Revise, ResolvedBy: Human, Channel: ChannelTUI}, nil
	})
	rec = &recorder{}
	if _, _, err := NewService[string](rec, lazy).Request(ctx, r); !errors.Is(err, ErrRationaleRequired) || len(rec.got) != 0 {
		t.Fatalf("revise without rationale: %v (recorded %d)", err, len(rec.got))
	}
	// The recorder's refusal comes back as is.
	rec = &recorder{err: ErrAlreadyDecided}
	if _, _, err := NewService[string](rec, kill).Request(ctx, r); !errors.Is(err, ErrAlreadyDecided) {
		t.Fatalf("recorder refusal: %v", err)
	}
}

func TestConsole(t *testing.T) {
	r := PendingReview{ReviewID: "f/g/0", FlowID: "f", StepID: "g", Question: "Ship it?",
		Outcomes: []Outcome{Approve, Revise, Kill}, Artifacts: Artifacts{StepOutputs: map[string]any{"build": map[string]any{"ok": true}}}}
	cases := []struct {
		name, input string
		want        Outcome
		note        string
		wantErr     error
		shows       string
	}{
		{"approve, no rationale", "a\n\n", Approve, "", nil, `build: {"ok":true}`},
		{"revise asks again for a rationale", "revise\n\nthe tests are missing\n", Revise, "the tests are missing", nil, "a revise needs a rationale"},
		{"unknown answer asks again", "maybe\nk\nbroken build\n", Kill, "broken build", nil, "please answer one of"},
		{"closed input decides nothing", "", "", "", ErrNoReviewer, "decision ["},
		{"closed before the rationale of a kill", "k\n", "", "", ErrNoReviewer, "rationale (required)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out strings.Builder
			con := &Console{In: strings.NewReader(c.input), Out: &out, Reviewer: "ann"}
			d, err := con.Handle(context.Background(), r)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("err %v, want %v", err, c.wantErr)
				}
			} else if err != nil || d.Outcome != c.want || d.Rationale != c.note || d.Reviewer != "ann" || d.Channel != ChannelConsole || d.ResolvedBy != Human {
				t.Fatalf("got %+v %v", d, err)
			}
			if !strings.Contains(out.String(), c.shows) {
				t.Fatalf("console output lacks %q:\n%s", c.shows, out.String())
			}
		})
	}
}

// TestConsoleHumanGate: the console decides an approver: human gate only
// on a terminal and after the typed confirmation; a pipe is refused before
// anything is read, and a line that never ends is refused within its bound.
func TestConsoleHumanGate(t *testing.T) {
	r := PendingReview{ReviewID: "f/g/0", FlowID: "flow-1234-5678", StepID: "g", Question: "Ship it?",
		Outcomes: []Outcome{Approve, Revise, Kill}, Approver: HumanApprover}
	for _, c := range []struct {
		name     string
		terminal bool
		in       io.Reader
		want     Outcome
		wantErr  error
	}{
		{"a pipe", false, strings.NewReader("approve\nlgtm\ng\n"), "", ErrNeedsTerminal},
		{"a terminal, confirmed", true, strings.NewReader("approve\nlgtm\ng\n"), Approve, nil},
		{"a terminal, confirmed by the short id", true, strings.NewReader("approve\nlgtm\nflow-123\n"), Approve, nil},
		{"a terminal, not confirmed", true, strings.NewReader("approve\nlgtm\nyes\n"), "", ErrNotConfirmed},
		{"endless input", true, endless{}, "", ErrLineTooLong},
	} {
		t.Run(c.name, func(t *testing.T) {
			con := &Console{In: c.in, Out: io.Discard, Reviewer: "ann", Terminal: c.terminal}
			d, err := con.Handle(context.Background(), r)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) || d.Outcome != "" {
					t.Fatalf("got %+v %v, want %v", d, err, c.wantErr)
				}
				return
			}
			if err != nil || d.Outcome != c.want {
				t.Fatalf("got %+v %v", d, err)
			}
		})
	}
}

// endless is an input that never ends a line (like /dev/zero).
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 0
	}
	return len(p), nil
}

// TestConsoleLibraryReview: a Go program's review is decided on the
// console with an option's number or a JSON value (plain text is a
// string), or rejected with a rationale; approver: human needs a terminal
// and the typed confirmation, as for gates; every line is bounded.
func TestConsoleLibraryReview(t *testing.T) {
	opts := PendingReview{ReviewID: "f/review-1/0", FlowID: "flow-1234-5678", StepID: "review-1", Question: "Which plan?",
		Outcomes: []Outcome{Approve, Kill}, Library: true, Options: []json.RawMessage{json.RawMessage(`"a"`), json.RawMessage(`"b"`)},
		Artifacts: Artifacts{Values: map[string]any{"cost": 3}}}
	free := opts
	free.Options = nil
	human := opts
	human.Approver = HumanApprover
	for _, c := range []struct {
		name     string
		r        PendingReview
		terminal bool
		in       io.Reader
		want     Decision
		wantErr  error
		shows    string
	}{
		{"an option", opts, false, strings.NewReader("7\nx\n2\nfine\n"), Decision{Outcome: Approve, Option: 2, Rationale: "fine"}, nil, "type a number from 1 to 2"},
		{"the options are shown", opts, false, strings.NewReader("1\n\n"), Decision{Outcome: Approve, Option: 1}, nil, "  [2] \"b\"\n"},
		{"the artifacts are shown", opts, false, strings.NewReader("1\n\n"), Decision{Outcome: Approve, Option: 1}, nil, "  cost: 3\n"},
		{"a JSON value", free, false, strings.NewReader(`{"n": 2}` + "\nok\n"), Decision{Outcome: Approve, Value: json.RawMessage(`{"n": 2}`), Rationale: "ok"}, nil, "a JSON value, or reject"},
		{"text is a string", free, false, strings.NewReader("ship it\n\n"), Decision{Outcome: Approve, Value: json.RawMessage(`"ship it"`)}, nil, ""},
		{"a rejection needs a rationale", opts, false, strings.NewReader("reject\n\ntoo costly\n"), Decision{Outcome: Kill, Rationale: "too costly"}, nil, "a kill needs a rationale"},
		{"closed input decides nothing", opts, false, strings.NewReader(""), Decision{}, ErrNoReviewer, "decision (1–2, or reject): "},
		{"human, a pipe", human, false, strings.NewReader("1\nok\nreview-1\n"), Decision{}, ErrNeedsTerminal, ""},
		{"human, a terminal, confirmed", human, true, strings.NewReader("1\nok\nreview-1\n"), Decision{Outcome: Approve, Option: 1, Rationale: "ok"}, nil, "type the gate's step id (review-1)"},
		{"human, a terminal, not confirmed", human, true, strings.NewReader("1\nok\nyes\n"), Decision{}, ErrNotConfirmed, ""},
		{"endless input", opts, true, endless{}, Decision{}, ErrLineTooLong, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out strings.Builder
			con := &Console{In: c.in, Out: &out, Reviewer: "ann", Terminal: c.terminal}
			d, err := con.Handle(context.Background(), c.r)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) || d.Outcome != "" {
					t.Fatalf("got %+v %v, want %v", d, err, c.wantErr)
				}
			} else if err != nil || d.Outcome != c.want.Outcome || d.Option != c.want.Option || string(d.Value) != string(c.want.Value) ||
				d.Rationale != c.want.Rationale || d.Channel != ChannelConsole || d.ResolvedBy != Human || d.StepID != "review-1" {
				t.Fatalf("got %+v %v, want %+v", d, err, c.want)
			}
			if !strings.Contains(out.String(), c.shows) {
				t.Errorf("console output lacks %q:\n%s", c.shows, out.String())
			}
		})
	}
	// Asked again (a value the recorder refused), the review is not shown twice.
	var out strings.Builder
	con := &Console{In: strings.NewReader("1\n\n2\n\n"), Out: &out}
	for range 2 {
		if _, err := con.Handle(context.Background(), opts); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(out.String(), "Which plan?"); n != 1 {
		t.Errorf("the review was shown %d times:\n%s", n, out.String())
	}
}
