package store

import (
	"bytes"
	"testing"

	"github.com/stratum-go/stratum/engine"
)

// TestStoredEventsCodec: the store's codec decodes every event the
// map-based build stored, and both Append's encoding (encodeEvent; the etcd
// store's is the same call) and the JSON library's (Event.MarshalJSON)
// write it back byte for byte (as current.jsonl: where the format changed
// on purpose since, the new form).
func TestStoredEventsCodec(t *testing.T) {
	current := storedEventLines(t, currentEventsFile)
	for i, line := range storedEventLines(t, storedEventsFile) {
		var ev engine.Event
		if err := unmarshalJSON(bytes.Clone(line), &ev); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		for _, enc := range []func(*engine.Event) ([]byte, error){encodeEvent, func(ev *engine.Event) ([]byte, error) { return marshalJSON(ev) }} {
			got, err := enc(&ev)
			if err != nil {
				t.Fatalf("line %d: %v", i+1, err)
			}
			if !bytes.Equal(got, current[i]) {
				t.Errorf("line %d:\nstored %s\nwant   %s\nnow    %s", i+1, line, current[i], got)
			}
		}
	}
}
