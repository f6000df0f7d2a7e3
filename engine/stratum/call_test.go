package stratum

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

type sentiment struct {
	Label      string  `json:"label" stratum:"enum=positive|negative|neutral"`
	Confidence float64 `json:"confidence" stratum:"min=0,max=1"`
}

type textIn struct {
	Text string `json:"text"`
}

func classify(t *testing.T, s Spec[textIn, sentiment]) *Fn[textIn, sentiment] {
	t.Helper()
	if s.Intent == "" {
		s.Intent = "Classify the sentiment"
	}
	f, err := NewInfer("classify", s)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// Rule 3/4: the second request carries only the first attempt's
// violation, in the seed's block; the third only the second's.
func TestRetryFeedsBackOnlyThePreviousViolations(t *testing.T) {
	fake := newFake(t,
		`{"label":"positive","confidence":0.2}`,
		`{"label":"positive","confidence":0.5}`,
		`{"label":"positive","confidence":0.9}`)
	rt, ctx := fake.runtime(t, Options{})
	f := classify(t, Spec[textIn, sentiment]{
		Ensure: []Check[sentiment]{
			Ensure("confidence must be at least 0.4", func(s sentiment) bool { return s.Confidence >= 0.4 }),
			Ensure("confidence must be at least 0.8", func(s sentiment) bool { return s.Confidence >= 0.8 }),
		},
	})
	out, err := f.Call(ctx, textIn{Text: "great"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Confidence != 0.9 {
		t.Fatalf("out = %+v", out)
	}
	p := fake.requests()
	if len(p) != 3 {
		t.Fatalf("%d requests", len(p))
	}
	if strings.Contains(p[0], "Previous attempt failed") {
		t.Errorf("first prompt has a retry block:\n%s", p[0])
	}
	want1 := "Previous attempt failed:\n  - confidence must be at least 0.4\n  - confidence must be at least 0.8\nFix these issues specifically."
	if got := after(p[1], "Previous attempt failed"); got != want1 {
		t.Errorf("second prompt's block:\n%s\nwant:\n%s", got, want1)
	}
	want2 := "Previous attempt failed:\n  - confidence must be at least 0.8\nFix these issues specifically."
	if got := after(p[2], "Previous attempt failed"); got != want2 {
		t.Errorf("third prompt's block:\n%s\nwant:\n%s", got, want2)
	}
	if !strings.HasPrefix(p[0], "Classify the sentiment\nInputs:\n  text: great") {
		t.Errorf("prompt:\n%s", p[0])
	}
	tr := rt.Trace()
	if len(tr) != 1 || tr[0].Attempts != 3 || len(tr[0].Violations) != 2 {
		t.Fatalf("trace = %+v", tr)
	}
	// cost summed over the three attempts: 3 × the price of one
	one := *tr[0].CostUSD / 3
	if one <= 0 || tr[0].InputTokens != 300 || tr[0].OutputTokens != 30 {
		t.Errorf("cost %v tokens %d/%d", *tr[0].CostUSD, tr[0].InputTokens, tr[0].OutputTokens)
	}
}

// Rule 5: parse failures end in *ParseError after Retries+1 requests.
func TestParseFailuresEndInParseError(t *testing.T) {
	fake := newFake(t, `not json at all`, `{"label":"happy","confidence":0.9}`, `{"label": "positive"`)
	rt, ctx := fake.runtime(t, Options{})
	f := classify(t, Spec[textIn, sentiment]{Retries: 2})
	_, err := f.Call(ctx, textIn{Text: "x"})
	var pe *ParseError
	if !errors.As(err, &pe) || !errors.Is(err, ErrStratum) {
		t.Fatalf("err = %v (%T)", err, err)
	}
	if n := len(fake.requests()); n != 3 {
		t.Fatalf("%d requests, want 3", n)
	}
	if len(pe.Attempts) != 3 {
		t.Fatalf("attempts = %v", pe.Attempts)
	}
	// the schema violation of attempt 2 is fed back to attempt 3
	if p := fake.requests()[2]; !strings.Contains(p, "label") || !strings.Contains(p, "Previous attempt failed") {
		t.Errorf("third prompt:\n%s", p)
	}
	if tr := rt.Trace(); len(tr) != 1 || tr[0].Error == "" || tr[0].Attempts != 3 {
		t.Errorf("failed call's trace = %+v", tr)
	}
}

// Rule 5: exhaustion on ensures is a *PostconditionError with every
// attempt's violations; NoRetries makes one request.
func TestPostconditionErrorAndNoRetries(t *testing.T) {
	fake := newFake(t, `{"label":"positive","confidence":0.1}`)
	_, ctx := fake.runtime(t, Options{})
	low := Ensure("confidence >= 0.5", func(s sentiment) bool { return s.Confidence >= 0.5 })
	_, err := classify(t, Spec[textIn, sentiment]{Ensure: []Check[sentiment]{low}}).Call(ctx, textIn{})
	var pe *PostconditionError
	if !errors.As(err, &pe) || len(pe.Attempts) != DefaultRetries+1 || pe.Attempts[3][0] != "confidence >= 0.5" {
		t.Fatalf("err = %#v", err)
	}
	before := len(fake.requests())
	_, err = classify(t, Spec[textIn, sentiment]{Ensure: []Check[sentiment]{low}, Retries: NoRetries}).Call(ctx, textIn{})
	if !errors.As(err, &pe) || len(fake.requests())-before != 1 {
		t.Fatalf("NoRetries: err %v, %d requests", err, len(fake.requests())-before)
	}
}

// Rule 3: a failed Given makes no request.
func TestFailedGivenMakesNoRequest(t *testing.T) {
	fake := newFake(t, `{"label":"positive","confidence":0.9}`)
	rt, ctx := fake.runtime(t, Options{})
	f := classify(t, Spec[textIn, sentiment]{Given: []Check[textIn]{
		Given("text is not empty", func(in textIn) bool { return in.Text != "" }),
	}})
	_, err := f.Call(ctx, textIn{})
	var pe *PreconditionError
	if !errors.As(err, &pe) || pe.Violations[0] != "text is not empty" {
		t.Fatalf("err = %v", err)
	}
	if n := len(fake.requests()); n != 0 {
		t.Fatalf("%d requests", n)
	}
	if tr := rt.Trace(); len(tr) != 1 || tr[0].Attempts != 0 {
		t.Fatalf("trace %+v", tr)
	}
}

// Rule 7: a 50 ms budget against a slow server is a *BudgetError with no
// retry.
func TestBudgetDeadlineIsNotRetried(t *testing.T) {
	fake := newFake(t, `{"label":"positive","confidence":0.9}`)
	fake.delay = 2 * time.Second
	_, ctx := fake.runtime(t, Options{})
	f := classify(t, Spec[textIn, sentiment]{Budget: Budget{Time: 50 * time.Millisecond}})
	start := time.Now()
	_, err := f.Call(ctx, textIn{Text: "x"})
	var be *BudgetError
	if !errors.As(err, &be) || be.Reason != "time" {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("took %v", d)
	}
	if n := len(fake.requests()); n != 1 {
		t.Fatalf("%d requests, want 1 (no retry)", n)
	}
}

// Rule 7: the call that crosses a flow's USD limit returns its value; the
// next call fails before any request.
func TestUSDBudgetStopsTheNextCall(t *testing.T) {
	fake := newFake(t, `{"label":"positive","confidence":0.9}`)
	_, ctx := fake.runtime(t, Options{})
	f := classify(t, Spec[textIn, sentiment]{})
	flow := NewFlow("two", Budget{USD: 0.00001}, func(ctx context.Context, in textIn) (sentiment, error) {
		if _, err := f.Call(ctx, in); err != nil {
			return sentiment{}, err
		}
		return f.Call(ctx, textIn{Text: "again"})
	})
	_, err := flow.Run(ctx, textIn{Text: "x"})
	var be *BudgetError
	if !errors.As(err, &be) || be.Reason != "usd" {
		t.Fatalf("err = %v", err)
	}
	if n := len(fake.requests()); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
}

// Rule 8: a session cache hit makes no request and records 0 attempts;
// outside the flow there is no session.
func TestSessionCacheHit(t *testing.T) {
	fake := newFake(t, `{"label":"positive","confidence":0.9}`)
	rt, ctx := fake.runtime(t, Options{})
	f := classify(t, Spec[textIn, sentiment]{Cache: CacheSession})
	flow := NewFlow("cached", Budget{}, func(ctx context.Context, in textIn) (sentiment, error) {
		if _, err := f.Call(ctx, in); err != nil {
			return sentiment{}, err
		}
		return f.Call(ctx, in)
	})
	out, err := flow.Run(ctx, textIn{Text: "x"})
	if err != nil || out.Label != "positive" {
		t.Fatal(out, err)
	}
	if n := len(fake.requests()); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
	tr := rt.Trace()
	if len(tr) != 2 || !tr[1].CacheHit || tr[1].Attempts != 0 || tr[0].FlowID == "" || tr[0].FlowID != tr[1].FlowID {
		t.Fatalf("trace %+v", tr)
	}
	// a second Run is a new session
	if _, err := flow.Run(ctx, textIn{Text: "x"}); err != nil {
		t.Fatal(err)
	}
	if n := len(fake.requests()); n != 2 {
		t.Fatalf("%d requests after the second run, want 2", n)
	}
}

// Rule 8: a global hit re-runs the ensures: a cached answer that no longer
// passes is not used.
func TestGlobalCacheRerunsEnsures(t *testing.T) {
	fake := newFake(t, `{"label":"positive","confidence":0.6}`)
	var warn strings.Builder
	_, ctx := fake.runtime(t, Options{Stderr: &warn})
	f := classify(t, Spec[textIn, sentiment]{Cache: CacheGlobal})
	for range 2 {
		if _, err := f.Call(ctx, textIn{Text: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(fake.requests()); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
	if !strings.Contains(warn.String(), "in memory") {
		t.Errorf("no warning: %q", warn.String())
	}
	strict := classify(t, Spec[textIn, sentiment]{Cache: CacheGlobal, Retries: NoRetries,
		Ensure: []Check[sentiment]{Ensure("confident", func(s sentiment) bool { return s.Confidence > 0.8 })}})
	strict.Call(ctx, textIn{Text: "x"})
	if n := len(fake.requests()); n != 2 {
		t.Fatalf("%d requests, want 2 (the cached answer fails the ensure)", n)
	}
}
