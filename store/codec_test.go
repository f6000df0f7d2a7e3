package store

import (
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
)

// FuzzDecodeSummary: arbitrary bytes never panic the summary decoder, and
// whatever decodes re-encodes to something that decodes the same way.
func FuzzDecodeSummary(f *testing.F) {
	d := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, sum := range []engine.FlowSummary{
		{},
		{FlowID: "f", FlowName: "n", Status: "running", Version: 3, CreatedAt: d, UpdatedAt: d},
		{FlowID: "g", Gate: &engine.PendingGate{StepID: "s", Deadline: &d, Approver: "human"}},
		{FlowID: "o", Owner: &engine.Lease{ID: "run-1", PID: 7, Host: "h", ExpiresAt: d}},
	} {
		for _, codec := range []byte{summaryCodecV1, summaryCodecV2} {
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
