package state

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"testing"
)

// storedStateBe2c848 is a state as the build be2c848 wrote it, before
// FlowState and Checkpoint shared their progress (StepProgress,
// RoundProgress, ChildProgress): every field set (fillValue), a checkpoint
// among them.
const storedStateBe2c848 = "testdata/flowstate-be2c848.json"

// addedSinceBe2c848 are the state's fields be2c848 did not have, so its
// stored state leaves them zero: Library (a Go program's flow, library.go)
// Ended (a flow ended by hand: stratum kill) and Judge (judge steps).
var addedSinceBe2c848 = []string{"state.Library", "state.Ended", "state.Judge"}

// checkpointAddedSinceBe2c848 are the checkpoint's: Judge (a judge step's
// progress when it was taken).
var checkpointAddedSinceBe2c848 = []string{"checkpoint.Judge"}

// A stored state and its checkpoints written by be2c848 decode the same
// into today's types: every key has its field (none unknown, none left
// zero) and encoding the decoded state gives back the same keys and values.
func TestStoredStateOfBe2c848Decodes(t *testing.T) {
	raw, err := os.ReadFile(storedStateBe2c848)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var st FlowState
	if err := dec.Decode(&st); err != nil {
		t.Fatalf("decoding the stored state: %v", err)
	}
	if zero := zeroFieldsOf(reflect.ValueOf(st), "state"); len(zero) > 0 && !slices.Equal(zero, addedSinceBe2c848) {
		t.Errorf("fields the stored state set decoded as zero: %v", zero)
	}
	cp := st.Checkpoints["x"]
	if cp == nil {
		t.Fatal("the stored state's checkpoint is gone")
	}
	if zero := zeroFieldsOf(reflect.ValueOf(*cp), "checkpoint"); len(zero) > 0 && !slices.Equal(zero, checkpointAddedSinceBe2c848) {
		t.Errorf("fields the stored checkpoint set decoded as zero: %v", zero)
	}
	again, err := json.Marshal(&st)
	if err != nil {
		t.Fatal(err)
	}
	var was, is any
	if err := json.Unmarshal(raw, &was); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(again, &is); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(was, is) {
		t.Fatalf("the stored state encodes differently after decoding:\nstored %s\nnow    %s", raw, again)
	}
	// The state's own key order is the original's (stratum query flow
	// prints it): the progress fields stay where they were.
	var stored, now bytes.Buffer
	if err := json.Compact(&stored, raw); err != nil {
		t.Fatal(err)
	}
	if err := json.Compact(&now, again); err != nil {
		t.Fatal(err)
	}
	if topKeys(t, stored.Bytes()) != topKeys(t, now.Bytes()) {
		t.Fatalf("the state's key order changed:\nstored %s\nnow    %s", topKeys(t, stored.Bytes()), topKeys(t, now.Bytes()))
	}
}

// zeroFieldsOf names the fields of the struct v that hold their zero value,
// the fields of embedded structs by their own names.
func zeroFieldsOf(v reflect.Value, path string) []string {
	var out []string
	for i := 0; i < v.NumField(); i++ {
		f, ft := v.Field(i), v.Type().Field(i)
		if ft.Anonymous && f.Kind() == reflect.Struct {
			out = append(out, zeroFieldsOf(f, path)...)
			continue
		}
		if f.IsZero() {
			out = append(out, path+"."+ft.Name)
		}
	}
	return out
}

// topKeys lists the top-level keys of a JSON object in order.
func topKeys(t *testing.T, b []byte) string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	var out []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	b, _ = json.Marshal(out)
	return string(b)
}
