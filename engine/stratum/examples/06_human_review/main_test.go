package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"testing"

	"github.com/stratum-go/stratum/engine/stratum"
	"github.com/stratum-go/stratum/engine/stratum/examples/internal/demo"
)

var record = flag.Bool("record", false, "re-record recording.replay against a scripted local server")

var script = []demo.Answer{
	{Match: "release announcement", Answers: []string{`{"title":"Stratum 1.4.0: typed human reviews","body":"Programs can now wait for a person: reviews carry typed options, appear in stratum tui and are decided with stratum gate."}`}},
}

// TestOffline runs the example from its recording; the auto-reviewer picks
// each option in turn through Runtime.Resolve.
func TestOffline(t *testing.T) {
	t.Setenv("STRATUM_HOME", t.TempDir())
	if *record {
		auto := &autoReviewer{option: 1, w: io.Discard}
		rt, done, err := demo.RecorderWith("recording.replay", script, stratum.Options{Sinks: []stratum.ReviewSink{auto}})
		if err != nil {
			t.Fatal(err)
		}
		auto.rt = rt
		err = run(stratum.WithRuntime(context.Background(), rt), io.Discard)
		done()
		if err != nil {
			t.Fatal(err)
		}
		t.Skip("recorded; run the test again to check the recording")
	}
	for option, want := range map[int]string{1: "decision: publish (as drafted)\n", 3: "decision: hold (not this week)\n"} {
		var out bytes.Buffer
		auto := &autoReviewer{option: option, w: &out}
		rt, done, err := demo.RuntimeWith(recording, false, stratum.Options{Sinks: []stratum.ReviewSink{auto}})
		if err != nil {
			t.Fatal(err)
		}
		auto.rt = rt
		err = run(stratum.WithRuntime(context.Background(), rt), &out)
		done()
		if err != nil {
			t.Fatal(err)
		}
		head := "review: Publish this announcement of 1.4.0?\n" +
			`  1. {"action":"publish","note":"as drafted"}` + "\n" +
			`  2. {"action":"edit","note":"needs a human pass first"}` + "\n" +
			`  3. {"action":"hold","note":"not this week"}` + "\n"
		if out.String() != head+want {
			t.Errorf("--decide %d:\n%s\nwant:\n%s", option, out.String(), head+want)
		}
	}
}
