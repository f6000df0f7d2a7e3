package stratum

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
)

// agreeOut names its JSON fields apart from its Go ones.
type agreeOut struct {
	Label string  `json:"label"`
	Score float64 `json:"score"`
}

// AgreeOn is checked whenever it is set — Quorum, Stable, Probable,
// Debate — against Out's JSON field names, with the JSON name to use
// when it names the Go field (AgreeOn: "Label" was accepted, every answer
// compared null == null, and AssertStable(1.0) passed on three labels).
func TestAgreeOnChecked(t *testing.T) {
	for name, c := range map[string]struct {
		def  func() error
		want string
	}{
		"stable, the Go name": {func() error {
			_, err := NewInfer("f", Spec[string, agreeOut]{Intent: "x", Stable: true, AgreeOn: "Label"})
			return err
		}, `did you mean "label"? (AgreeOn names the JSON field, not the Go field Label)`},
		"probable, a typo": {func() error {
			_, err := NewInfer("f", Spec[string, agreeOut]{Intent: "x", AgreeOn: "lable"})
			return err
		}, `did you mean "label"?`},
		"quorum, the Go name": {func() error {
			_, err := NewInfer("f", Spec[string, agreeOut]{Intent: "x", Quorum: 3, Threshold: 2, AgreeOn: "Score"})
			return err
		}, `did you mean "score"?`},
		"an output without fields": {func() error {
			_, err := NewInfer("f", Spec[string, string]{Intent: "x", AgreeOn: "label"})
			return err
		}, "has no fields to compare"},
	} {
		err := c.def()
		var ce *CompileError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	if _, err := NewInfer("f", Spec[string, map[string]any]{Intent: "x", AgreeOn: "label"}); err != nil {
		t.Errorf("a map output: %v", err)
	}

	// With a valid AgreeOn, three different labels are not stable, and the
	// error names the function (Function was empty on Stable calls).
	fake := newFake(t)
	fake.answer = func(n int, _ string) string { return fmt.Sprintf(`{"label":"l%d","score":1}`, n%3) }
	_, ctx := fake.runtime(t, Options{TestMode: true, SampleN: 3})
	f := MustInfer("labeler", Spec[string, agreeOut]{Intent: "Label it", Stable: true, AgreeOn: "label"})
	_, err := f.Call(ctx, "x")
	var se *StabilityError
	if !errors.As(err, &se) || se.Function != "labeler" || se.Agreement > 0.34 || !strings.HasPrefix(err.Error(), "stratum: labeler: unstable") {
		t.Fatalf("Stable call: %v (%+v)", err, se)
	}
	p, err := f.Probable(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.AssertStable(1.0); !errors.As(err, &se) || se.Function != "labeler" {
		t.Fatalf("AssertStable: %v", err)
	}

	// Debate: checked before any agent runs.
	var calls atomic.Int32
	agent := func(_ context.Context, turn Turn[string, agreeOut]) (agreeOut, error) {
		calls.Add(1)
		return agreeOut{Label: fmt.Sprint(calls.Load())}, nil
	}
	synth := func(_ context.Context, tr Transcript[string, agreeOut]) (bool, error) { return tr.Converged, nil }
	for agreeOn, want := range map[string]string{"nonexistent": "is not a JSON field", "Label": `did you mean "label"?`} {
		_, err := Debate[string, agreeOut, bool]{Agents: []func(context.Context, Turn[string, agreeOut]) (agreeOut, error){agent, agent},
			AgreeOn: agreeOn, Synthesize: synth}.Run(context.Background(), "topic")
		var ce *CompileError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), want) || calls.Load() != 0 {
			t.Errorf("Debate AgreeOn %q: %v after %d agent calls", agreeOn, err, calls.Load())
		}
	}
	converged, err := Debate[string, agreeOut, bool]{Agents: []func(context.Context, Turn[string, agreeOut]) (agreeOut, error){agent, agent},
		AgreeOn: "label", Synthesize: synth}.Run(context.Background(), "topic")
	if err != nil || converged {
		t.Errorf("different labels converged: %v, %v", converged, err)
	}
}

// A quorum's winner is the agreeing answer with the highest confidence
// (numbers are exact JSON numbers inside: the comparison still reads them).
func TestQuorumWinnerByConfidence(t *testing.T) {
	f := MustInfer("vote", Spec[string, vote]{Intent: "Vote", Quorum: 3, AgreeOn: "answer", Threshold: 2})
	outs := []vote{{"a", 0.5}, {"b", 0.99}, {"a", 0.9}, {"a", 0.7}}
	if w := f.winner(outs, []int{0, 2, 3}); w.Confidence != 0.9 {
		t.Fatalf("winner %+v", w)
	}
}

// A BranchError matches ErrStratum whatever the branch returned, and
// still unwraps to it.
func TestBranchErrorMatchesErrStratum(t *testing.T) {
	mine := errors.New("mine")
	_, err := All(context.Background(), func(context.Context) (int, error) { return 0, mine })
	var be *BranchError
	if !errors.As(err, &be) || !errors.Is(err, ErrStratum) || !errors.Is(err, mine) {
		t.Fatalf("err %v", err)
	}
	if _, err := Any(context.Background(), func(context.Context) (int, error) { return 0, mine }); !errors.Is(err, ErrStratum) {
		t.Fatalf("Any: %v", err)
	}
}
