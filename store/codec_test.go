package store

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
)

// The stores' JSON codec decodes a state with its checkpoints as stored by
// be2c848, before FlowState and Checkpoint shared their progress structs
// (the engine's fixture), exactly as encoding/json does, and a Put and Get
// of it through the store gives it back.
func TestStoredStateOfBe2c848(t *testing.T) {
	raw, err := os.ReadFile("../engine/state/testdata/flowstate-be2c848.json")
	if err != nil {
		t.Fatal(err)
	}
	var std, ours state.FlowState
	if err := json.Unmarshal(raw, &std); err != nil {
		t.Fatal(err)
	}
	if err := unmarshalJSON(raw, &ours); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(std, ours) {
		t.Fatalf("the store's codec decodes the stored state differently:\n%+v\n%+v", ours, std)
	}
	if cp := ours.Checkpoints["x"]; cp == nil || cp.Label == "" || cp.StepOutputs == nil || cp.IterationBest == nil || cp.ChildAudits == nil {
		t.Fatalf("the stored checkpoint decoded as %+v", cp)
	}
	s := newTestStore(t, Options{})
	st := ours.Clone()
	st.FlowID, st.Version, st.Status = "f", 0, state.StatusRunning
	expect := st.Stamp(time.Now())
	if err := s.Update(bg, func(tx engine.Tx) error { return tx.Put(st, engine.Summarize(st, nil), expect) }); err != nil {
		t.Fatal(err)
	}
	got := storeGet(t, s, "f")
	a, _ := json.Marshal(got)
	b, _ := json.Marshal(st)
	if string(a) != string(b) {
		t.Fatalf("the stored state came back changed:\n%s\n%s", a, b)
	}
}

// FuzzDecodeSummary: arbitrary bytes never panic the summary decoder, and
// whatever decodes re-encodes to something that decodes the same way.
func FuzzDecodeSummary(f *testing.F) {
	d := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, sum := range []state.FlowSummary{
		{},
		{FlowID: "f", FlowName: "n", Status: "running", Version: 3, CreatedAt: d, UpdatedAt: d},
		{FlowID: "g", Gate: &state.PendingGate{StepID: "s", Deadline: &d, Approver: "human"}},
		{FlowID: "o", Owner: &state.Lease{ID: "run-1", PID: 7, Host: "h", ExpiresAt: d}},
		{FlowID: "r", Gate: &state.PendingGate{StepID: "s"}, Review: &state.GateReview{Question: "Ship?", Revise: true}},
	} {
		for _, codec := range []byte{summaryCodecV1, summaryCodecV2, summaryCodecV3} {
			b, err := encodeSummary(&sum, codec)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		sum, err := decodeSummary(b)
		if err != nil {
			return
		}
		again, err := encodeSummary(sum, b[0])
		if err != nil {
			return // e.g. a year MarshalBinary refuses
		}
		if _, err := decodeSummary(again); err != nil {
			t.Fatalf("re-encoded summary does not decode: %v", err)
		}
	})
}
