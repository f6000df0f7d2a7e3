package infer

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/internal/llm"
)

func loopRequest(retries int, check func(any) ([]string, bool)) LoopRequest {
	return LoopRequest{
		AttemptRequest: AttemptRequest{Function: "classify", Models: []string{"fake/model-1"},
			Parts:  PromptParts{Intent: "Classify", Inputs: []Binding{{Name: "text", Value: "hi"}}},
			Output: Output{Hash: "none"}},
		Retries: retries, Check: check,
	}
}

// The loop feeds back only the previous attempt's violations, sums usage
// and cost, and ends in an ExhaustedError whose Parse says what the last
// failure was.
func TestLoop(t *testing.T) {
	fp := &fakeProvider{answers: []fakeAnswer{{content: `nope`}, {content: `{"n":1}`}, {content: `{"n":2}`}}}
	ex := New(&fakeModels{p: fp})
	check := func(v any) ([]string, bool) {
		if v.(map[string]any)["n"] == 2.0 {
			return nil, false
		}
		return []string{"n must be 2"}, false
	}
	var charged int
	req := loopRequest(3, check)
	req.Charge = func(AttemptResult) { charged++ }
	res, err := ex.Loop(context.Background(), req)
	if err != nil || res.Value.(map[string]any)["n"] != 2.0 || res.Attempts != 3 || charged != 3 {
		t.Fatalf("res %+v err %v charged %d", res, err, charged)
	}
	if len(fp.reqs) != 3 || strings.Contains(fp.reqs[2].Prompt, "parse error") || !strings.HasSuffix(fp.reqs[2].Prompt, "  - n must be 2\nFix these issues specifically.") {
		t.Fatalf("third prompt:\n%s", fp.reqs[2].Prompt)
	}
	if !strings.Contains(fp.reqs[1].Prompt, "parse error") {
		t.Fatalf("second prompt:\n%s", fp.reqs[1].Prompt)
	}
	if res.Usage.InputTokens != 3000 || res.CostUSD == nil || *res.CostUSD <= 0 {
		t.Fatalf("usage %+v cost %v", res.Usage, res.CostUSD)
	}

	fp = &fakeProvider{answers: []fakeAnswer{{content: `{"n":1}`}, {content: `bad`}}}
	res, err = New(&fakeModels{p: fp}).Loop(context.Background(), loopRequest(1, check))
	var ee *ExhaustedError
	if !errors.As(err, &ee) || !ee.Parse || len(ee.Violations) != 2 || !slices.Equal(ee.Violations[0], []string{"n must be 2"}) {
		t.Fatalf("err %#v", err)
	}
}

// An exhausted budget stops the loop before a request; a config error
// stops it at once.
func TestLoopStops(t *testing.T) {
	fp := &fakeProvider{answers: []fakeAnswer{{content: `{"n":1}`}}}
	ex := New(&fakeModels{p: fp})
	req := loopRequest(3, func(any) ([]string, bool) { return []string{"again"}, false })
	calls := 0
	req.Budget = func() engine.BudgetView {
		calls++
		if calls > 1 {
			return engine.BudgetView{Deadline: time.Now().Add(-time.Second)}
		}
		return engine.BudgetView{}
	}
	res, err := ex.Loop(context.Background(), req)
	if !errors.Is(err, engine.ErrBudgetExhausted) || res.Attempts != 1 || len(fp.reqs) != 1 {
		t.Fatalf("res %+v err %v", res, err)
	}
	fp = &fakeProvider{answers: []fakeAnswer{{err: &llm.APIError{Provider: "fake", Status: 401, Message: "bad key"}}}}
	_, err = New(&fakeModels{p: fp}).Loop(context.Background(), loopRequest(3, nil))
	var ae *engine.AttemptError
	if !errors.As(err, &ae) || ae.Kind != engine.AttemptConfig || len(fp.reqs) != 1 {
		t.Fatalf("err %v after %d requests", err, len(fp.reqs))
	}
}
