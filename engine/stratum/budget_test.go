package stratum

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Rule 7: a token budget stops the attempt after the one that spent it;
// a flow's expired deadline stops the next call before any request; an
// inner flow draws from the outer one's envelope.
func TestBudgets(t *testing.T) {
	t.Run("tokens", func(t *testing.T) {
		fake := newFake(t, `{"label":"positive","confidence":0.1}`) // 110 tokens per answer
		rt, ctx := fake.runtime(t, Options{})
		f := classify(t, Spec[textIn, sentiment]{Budget: Budget{Tokens: 150},
			Ensure: []Check[sentiment]{Ensure("confident", func(s sentiment) bool { return s.Confidence > 0.5 })}})
		_, err := f.Call(ctx, textIn{Text: "x"})
		var be *BudgetError
		if !errors.As(err, &be) || be.Reason != "tokens" || len(fake.requests()) != 2 {
			t.Fatalf("err %v after %d requests", err, len(fake.requests()))
		}
		// The error names the axis, the limit, what was spent, the envelope.
		if be.Limit != (Budget{Tokens: 150}) || be.Spent != (Budget{Tokens: 220}) || be.Envelope != "the call" ||
			!strings.Contains(err.Error(), "budget exhausted: tokens: 220 spent of 150 (the call)") {
			t.Errorf("BudgetError %+v: %v", be, err)
		}
		if tr := rt.Trace(); tr[0].Attempts != 2 || tr[0].InputTokens != 200 {
			t.Fatalf("trace %+v", tr[0])
		}
	})
	t.Run("flow deadline", func(t *testing.T) {
		fake := newFake(t, `{"label":"positive","confidence":0.9}`)
		_, ctx := fake.runtime(t, Options{})
		f := classify(t, Spec[textIn, sentiment]{})
		flow := NewFlow("slow", Budget{Time: 20 * time.Millisecond}, func(ctx context.Context, in textIn) (sentiment, error) {
			time.Sleep(30 * time.Millisecond) // plain work spends the flow's time
			return f.Call(ctx, in)
		})
		_, err := flow.Run(ctx, textIn{Text: "x"})
		var be *BudgetError
		if !errors.As(err, &be) || be.Reason != "time" || len(fake.requests()) != 0 {
			t.Fatalf("err %v, %d requests", err, len(fake.requests()))
		}
		if be.Limit != (Budget{Time: 20 * time.Millisecond}) || be.Spent.Time < 20*time.Millisecond || be.Envelope != "flow slow" ||
			!strings.Contains(err.Error(), "budget exhausted: time: ") || !strings.Contains(err.Error(), "spent of 20ms (flow slow)") {
			t.Errorf("BudgetError %+v: %v", be, err)
		}
	})
	t.Run("nested flows", func(t *testing.T) {
		fake := newFake(t, `{"label":"positive","confidence":0.9}`)
		_, ctx := fake.runtime(t, Options{})
		f := classify(t, Spec[textIn, sentiment]{})
		inner := NewFlow("inner", Budget{}, func(ctx context.Context, in textIn) (sentiment, error) { return f.Call(ctx, in) })
		outer := NewFlow("outer", Budget{USD: 0.00001}, func(ctx context.Context, in textIn) (sentiment, error) {
			if _, err := inner.Run(ctx, in); err != nil {
				return sentiment{}, err
			}
			if FlowID(ctx) == "" {
				t.Error("no flow id in the flow")
			}
			return inner.Run(ctx, in)
		})
		_, err := outer.Run(ctx, textIn{Text: "x"})
		var be *BudgetError
		if !errors.As(err, &be) || be.Reason != "usd" || len(fake.requests()) != 1 {
			t.Fatalf("err %v, %d requests", err, len(fake.requests()))
		}
		if be.Limit.USD != 0.00001 || be.Spent.USD <= be.Limit.USD || be.Envelope != "flow outer" || !strings.Contains(err.Error(), "usd: $") {
			t.Errorf("BudgetError %+v: %v", be, err)
		}
		if FlowID(ctx) != "" {
			t.Error("a flow id outside any flow")
		}
	})
}

// Rule 7: time spent waiting for a person is not charged to the flow's
// time budget: a flow of 300 ms whose review is decided after 400 ms still
// has its time for the next Call; time spent otherwise still counts.
func TestHumanWaitNotCharged(t *testing.T) {
	fake := newFake(t, `{"label":"positive","confidence":0.9}`)
	sink := newChanSink()
	rt, ctx := fake.runtime(t, Options{Sinks: []ReviewSink{sink}})
	f := classify(t, Spec[textIn, sentiment]{})
	go func() {
		p := sink.next(t)
		time.Sleep(400 * time.Millisecond)
		rt.Resolve(context.Background(), Resolution{ReviewID: p.ReviewID, Value: json.RawMessage(`"go"`), Reviewer: "ann"})
	}()
	flow := NewFlow("reviewed", Budget{Time: 300 * time.Millisecond}, func(ctx context.Context, in textIn) (sentiment, error) {
		if _, err := AwaitHuman(ctx, Review[string]{Question: "Classify?"}); err != nil {
			return sentiment{}, err
		}
		return f.Call(ctx, in)
	})
	if _, err := flow.Run(ctx, textIn{Text: "x"}); err != nil || len(fake.requests()) != 1 {
		t.Fatalf("after a 400 ms review: %v, %d requests", err, len(fake.requests()))
	}

	// Two reviews waited for at once count once; the rest of the time
	// still counts.
	go func() {
		a, b := sink.next(t), sink.next(t)
		time.Sleep(400 * time.Millisecond)
		rt.Resolve(context.Background(), Resolution{ReviewID: a.ReviewID, Value: json.RawMessage(`"go"`), Reviewer: "ann"})
		rt.Resolve(context.Background(), Resolution{ReviewID: b.ReviewID, Value: json.RawMessage(`"go"`), Reviewer: "ann"})
	}()
	flow = NewFlow("busy", Budget{Time: 300 * time.Millisecond}, func(ctx context.Context, in textIn) (sentiment, error) {
		ask := func(ctx context.Context) (string, error) {
			d, err := AwaitHuman(ctx, Review[string]{Question: "Classify?"})
			return d.Value, err
		}
		if _, err := All(ctx, ask, ask); err != nil {
			return sentiment{}, err
		}
		time.Sleep(350 * time.Millisecond) // work is charged
		return f.Call(ctx, in)
	})
	_, err := flow.Run(ctx, textIn{Text: "x"})
	var be *BudgetError
	if !errors.As(err, &be) || be.Reason != "time" || be.Spent.Time < 350*time.Millisecond || be.Spent.Time > 600*time.Millisecond {
		t.Fatalf("after the reviews and 350 ms of work: %v (%+v)", err, be)
	}
}

// Bad input gets an error, never a panic.
func TestBadInputIsAnError(t *testing.T) {
	fake := newFake(t, `{"label":"positive","confidence":0.9}`)
	_, ctx := fake.runtime(t, Options{})
	var nilFn *Fn[textIn, sentiment]
	if _, err := nilFn.Call(ctx, textIn{}); !errors.Is(err, ErrStratum) {
		t.Errorf("nil Fn: %v", err)
	}
	if _, err := NewInfer("", Spec[textIn, sentiment]{Intent: "x"}); err == nil {
		t.Error("no name accepted")
	}
	if _, err := NewInfer("x", Spec[textIn, sentiment]{}); err == nil {
		t.Error("no intent accepted")
	}
	type badIn struct {
		C chan int `json:"c"`
	}
	if _, err := NewInfer("x", Spec[badIn, sentiment]{Intent: "x"}); err == nil {
		t.Error("a channel input accepted")
	}
	panicky := classify(t, Spec[textIn, sentiment]{Retries: NoRetries, Ensure: []Check[sentiment]{Ensure("never panics", func(sentiment) bool { panic("boom") })}})
	if _, err := panicky.Call(ctx, textIn{}); !errors.As(err, new(*PostconditionError)) {
		t.Errorf("panicking ensure: %v", err)
	}
	refine := classify(t, Spec[textIn, sentiment]{Refine: &Refine[sentiment]{Until: func(sentiment) bool { panic("boom") }}})
	if _, err := refine.Call(ctx, textIn{}); !errors.Is(err, ErrStratum) {
		t.Errorf("panicking Until: %v", err)
	}
	var nilFlow *Flow[int, int]
	if _, err := nilFlow.Run(ctx, 1); !errors.Is(err, ErrStratum) {
		t.Errorf("nil flow: %v", err)
	}
	if _, err := (Debate[int, int, int]{}).Run(ctx, 1); !errors.Is(err, ErrStratum) {
		t.Errorf("empty debate: %v", err)
	}
}

// A USD budget over a model with no known price is refused before any
// request — the Call's own budget, an enclosing flow's, a Probable's — as
// `stratum run` refuses such a flow: its calls would be charged nothing, so
// the budget could never be enforced. Without a USD budget, or with the
// model priced through STRATUM_MODEL_PRICING_JSON, the same call runs.
func TestUSDBudgetOverUnpricedModelRefused(t *testing.T) {
	fake := newFake(t, `{"label":"positive","confidence":0.9}`)
	env := fake.env()
	env["STRATUM_MODEL"] = "openai/gpt-from-the-future"
	getenv := func(k string) string { return env[k] }
	_, ctx := fake.runtime(t, Options{Getenv: getenv})
	refused := func(name, scope string, err error) {
		t.Helper()
		if err == nil || !errors.Is(err, ErrStratum) || errors.As(err, new(*BudgetError)) ||
			!strings.Contains(err.Error(), "a USD budget ("+scope+") covers this call, but model openai/gpt-from-the-future has no known price") ||
			!strings.Contains(err.Error(), "STRATUM_MODEL_PRICING_JSON") {
			t.Errorf("%s: %v", name, err)
		}
	}
	withUSD := classify(t, Spec[textIn, sentiment]{Budget: Budget{USD: 0.01}})
	_, err := withUSD.Call(ctx, textIn{Text: "x"})
	refused("the call's budget", "the call", err)
	_, err = withUSD.Probable(ctx, textIn{Text: "x"})
	refused("Probable", "the call", err)
	plain := classify(t, Spec[textIn, sentiment]{Budget: Budget{Tokens: 10000, Time: time.Minute}})
	_, err = NewFlow("spend", Budget{USD: 0.05}, func(ctx context.Context, in textIn) (sentiment, error) {
		return plain.Call(ctx, in)
	}).Run(ctx, textIn{Text: "x"})
	refused("a flow's budget", "flow spend", err)
	if n := len(fake.requests()); n != 0 {
		t.Fatalf("%d requests before the refusals, want 0", n)
	}

	// Without a USD budget the unpriced model runs (its cost unknown).
	if _, err := plain.Call(ctx, textIn{Text: "x"}); err != nil {
		t.Fatalf("no USD budget: %v", err)
	}
	// Priced, the USD budget is enforced and the call runs.
	prices := filepath.Join(t.TempDir(), "prices.json")
	if err := os.WriteFile(prices, []byte(`{"providers": [{"id": "openai", "models": [{"id": "gpt-from-the-future", `+
		`"match": {"equals": "gpt-from-the-future"}, "prices": {"input_mtok": 0.15, "output_mtok": 0.6}}]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	env["STRATUM_MODEL_PRICING_JSON"] = prices
	rt, ctx := fake.runtime(t, Options{Getenv: getenv})
	if _, err := withUSD.Call(ctx, textIn{Text: "x"}); err != nil {
		t.Fatalf("priced: %v", err)
	}
	if tr := rt.Trace(); len(tr) != 1 || tr[0].CostUSD == nil || *tr[0].CostUSD <= 0 {
		t.Fatalf("priced call's trace: %+v", tr)
	}
	if n := len(fake.requests()); n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}
}
