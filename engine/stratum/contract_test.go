package stratum

import (
	"strings"
	"testing"
)

type contact struct {
	Name     string `json:"name"`
	Quantity int    `json:"quantity"`
}

// A Call's answer is checked by the same checker as `stratum run`'s
// (engine/internal/contract): the same violation text, named after Out as
// a spec names its contract, fed back in the retry's prompt.
func TestCallContractViolationText(t *testing.T) {
	fake := newFake(t, `{"name":"Ann","quantity":"3"}`, `{"name":"Ann","quantity":3}`)
	_, ctx := fake.runtime(t, Options{})
	out, err := MustInfer("extract", Spec[string, contact]{Intent: "Extract the contact"}).Call(ctx, "x")
	if err != nil || out.Quantity != 3 {
		t.Fatalf("%+v %v", out, err)
	}
	want := `output contract 'contact' violation: at '/quantity': must be of type integer but found string "3"`
	if p := fake.requests(); len(p) != 2 || !strings.Contains(p[1], want) {
		t.Fatalf("the retry does not carry %s:\n%q", want, p)
	}
}
