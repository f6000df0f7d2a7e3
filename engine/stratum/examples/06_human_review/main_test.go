package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"testing"

	"github.com/stratum-go/stratum/engine/stratum"
	"github.com/stratum-go/stratum/engine/stratum/examples/internal/demo"
	"github.com/stratum-go/stratum/review"
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
		err = run(stratum.WithRuntime(context.Background(), rt), io.Discard, "any")
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
		err = run(stratum.WithRuntime(context.Background(), rt), &out, "any")
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

// TestHumanApproverRefusesTheAutoReviewer: with Approver "human" a
// program cannot decide: the auto-reviewer's Resolve is refused and the
// review stays open until the program stops waiting.
func TestHumanApproverRefusesTheAutoReviewer(t *testing.T) {
	t.Setenv("STRATUM_HOME", t.TempDir())
	var out bytes.Buffer
	refused := make(chan error, 1)
	var r *stratum.Runtime
	sink := sinkFunc(func(ctx context.Context, p stratum.PendingReview) error {
		refused <- r.Resolve(ctx, stratum.Resolution{ReviewID: p.ReviewID, Value: p.Options[0], Reviewer: "auto-reviewer"})
		return nil
	})
	r, done, err := demo.RuntimeWith(recording, false, stratum.Options{Sinks: []stratum.ReviewSink{sink}})
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	ctx, cancel := context.WithCancel(stratum.WithRuntime(context.Background(), r))
	ended := make(chan error, 1)
	go func() { ended <- run(ctx, &out, "human") }()
	if err := <-refused; !errors.Is(err, review.ErrNotAllowed) {
		t.Fatalf("the auto-reviewer decided a human review: %v", err)
	}
	cancel()
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Fatalf("run = %v", err)
	}
}

type sinkFunc func(context.Context, stratum.PendingReview) error

func (f sinkFunc) Emit(ctx context.Context, p stratum.PendingReview) error { return f(ctx, p) }
