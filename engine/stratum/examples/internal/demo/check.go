package demo

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/stratum-go/stratum/engine/stratum"
)

// Check is an example's test: with record, it re-records recording.replay
// in the working directory by script and skips; else it runs the example
// from its embedded recording, compares the output with want and returns
// the Runtime (closed when the test ends) for more checks.
func Check(t *testing.T, record bool, recording []byte, script []Answer, run func(context.Context, io.Writer) error, want string) *stratum.Runtime {
	t.Helper()
	t.Setenv("STRATUM_HOME", t.TempDir())
	if record {
		rt, done, err := Recorder("recording.replay", script)
		if err != nil {
			t.Fatal(err)
		}
		err = run(stratum.WithRuntime(context.Background(), rt), io.Discard)
		done()
		if err != nil {
			t.Fatal(err)
		}
		t.Skip("recorded; run the test again to check the recording")
	}
	rt, done, err := Runtime(recording, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(done)
	var out bytes.Buffer
	if err := run(stratum.WithRuntime(context.Background(), rt), &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != want {
		t.Fatalf("output:\n%s\nwant:\n%s", out.String(), want)
	}
	return rt
}
