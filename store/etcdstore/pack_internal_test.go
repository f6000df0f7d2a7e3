package etcdstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/store/etcdstore/etcdtest"
)

// packedState is a state's JSON as a ten-step flow writes it: the spec's
// source and the step outputs, much of it repeated.
func packedState(steps int) []byte {
	var b strings.Builder
	b.WriteString(`{"flow_id":"f","raw_spec":"`)
	for i := range steps {
		fmt.Fprintf(&b, `      - id: s%d\n        intent: \"Do part %d of the task and score it\"\n        output_contract: Out\n`, i, i)
	}
	b.WriteString(`","step_outputs":{`)
	for i := range steps {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"s%d":{"score":0.9,"summary":"done: s%d client 0 client 0 client 0 client 0"}`, i, i)
	}
	b.WriteString(`}}`)
	return []byte(b.String())
}

// TestPackState: a state of packMin bytes or more is stored deflated and
// reads back the same; a shorter one, or JSON written before schema 5, is
// stored and read as it is; a damaged packed value is an error.
func TestPackState(t *testing.T) {
	long := packedState(10)
	for _, tc := range []struct {
		name   string
		in     []byte
		packed bool
	}{
		{"long", long, true},
		{"short", []byte(`{"flow_id":"f"}`), false},
		{"just below packMin", bytes.Repeat([]byte("a"), packMin-1), false},
	} {
		v := packState(tc.in)
		if got := len(v) > 0 && v[0] == packDeflate; got != tc.packed {
			t.Errorf("%s: packed %v, want %v", tc.name, got, tc.packed)
		}
		out, err := unpackState(v)
		if err != nil || !bytes.Equal(out, tc.in) {
			t.Errorf("%s: read back %d bytes, %v; want the %d written", tc.name, len(out), err, len(tc.in))
		}
	}
	if v := packState(long); len(v) > len(long)/3 {
		t.Errorf("a ten-step state of %d bytes packed to %d, want at most a third", len(long), len(v))
	}
	if _, err := unpackState([]byte{packDeflate, 0xff, 0xff, 0xff}); err == nil {
		t.Error("a damaged packed value read without an error")
	}
}

// TestPackedStateDamaged: a packed state that does not inflate is reported
// as a damaged flow (engine.DamagedError), like one that does not decode.
func TestPackedStateDamaged(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	s, err := Open(ctx, Options{Endpoints: c.Endpoints, Prefix: "/packed/"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	putFlow(t, s, "f", state.StatusRunning)
	if _, err := s.cli.Put(ctx, s.key("f/f"), string([]byte{packDeflate, 0xff, 0xff})); err != nil {
		t.Fatal(err)
	}
	err = s.View(ctx, func(tx engine.Tx) error { _, err := tx.Get("f"); return err })
	var d *engine.DamagedError
	if !errors.As(err, &d) || d.FlowID != "f" {
		t.Fatalf("Get of a damaged packed state: %v, want a DamagedError naming f", err)
	}
}

func BenchmarkPackState(b *testing.B) {
	long := packedState(10)
	b.SetBytes(int64(len(long)))
	for b.Loop() {
		if _, err := unpackState(packState(long)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPackOnly(b *testing.B) {
	long := packedState(10)
	b.SetBytes(int64(len(long)))
	for b.Loop() {
		packState(long)
	}
}
