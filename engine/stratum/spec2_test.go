package stratum

import (
	"errors"
	"strings"
	"testing"
)

// Spec.Examples are placed by the prompt compiler after the context and
// before the inputs, covered by the prompt hash; Spec.MaxTokens is the
// request's output cap.
func TestExamplesAndMaxTokens(t *testing.T) {
	f := newFake(t, `{"label":"positive","confidence":0.9}`)
	rt, ctx := f.runtime(t, Options{})
	fn := classify(t, Spec[textIn, sentiment]{Context: []string{"Be brief."}, MaxTokens: 120, Examples: []Example[textIn, sentiment]{
		{In: textIn{Text: "I love it"}, Out: sentiment{Label: "positive", Confidence: 0.95}},
		{In: textIn{Text: "line one\nline two"}, Out: sentiment{Label: "neutral", Confidence: 0.6}},
	}})
	if _, err := fn.Call(ctx, textIn{Text: "fine"}); err != nil {
		t.Fatal(err)
	}
	want := "Classify the sentiment\nBe brief.\nExamples:\n  Example 1:\n    Inputs:\n      text: I love it\n" +
		"    Output: {\"confidence\":0.95,\"label\":\"positive\"}\n  Example 2:\n    Inputs:\n      text:\n        ```\n        line one\n        line two\n        ```\n" +
		"    Output: {\"confidence\":0.6,\"label\":\"neutral\"}\nInputs:\n  text: fine"
	if got := f.requests()[0]; got != want {
		t.Fatalf("prompt:\n%s\nwant:\n%s", got, want)
	}
	f.mu.Lock()
	cap := f.bodies[0]["max_completion_tokens"]
	f.mu.Unlock()
	if cap != float64(120) {
		t.Fatalf("max_completion_tokens = %v", cap)
	}
	plain := classify(t, Spec[textIn, sentiment]{Context: []string{"Be brief."}})
	if _, err := plain.Call(ctx, textIn{Text: "fine"}); err != nil {
		t.Fatal(err)
	}
	tr := rt.Trace()
	if tr[0].PromptHash == tr[1].PromptHash {
		t.Fatal("the examples do not change the prompt hash")
	}
	_, err := NewInfer("classify", Spec[textIn, sentiment]{Intent: "x", Examples: []Example[textIn, sentiment]{
		{In: textIn{Text: "a"}, Out: sentiment{Label: "ecstatic", Confidence: 2}}}})
	var ce *CompileError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "example 1's output does not fit the output contract") {
		t.Fatalf("err = %v", err)
	}
}
