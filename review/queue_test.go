package review

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestQueueEmit(t *testing.T) {
	q := NewQueue(2, 20*time.Millisecond)
	r := PendingReview{ReviewID: "f/g/0"}
	if err := q.Emit(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if got := <-q.Reviews(); got.ReviewID != "f/g/0" {
		t.Fatalf("got %+v", got)
	}
	// A busy reader never blocks the run for long: a full queue drops the
	// offer after the wait.
	for i := 0; i < cap(q.ch); i++ {
		if err := q.Emit(context.Background(), PendingReview{ReviewID: "fill"}); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	if err := q.Emit(context.Background(), PendingReview{ReviewID: "dropped"}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 20*time.Millisecond || d > 5*time.Second {
		t.Fatalf("Emit on a full queue returned after %v, want about the wait", d)
	}
	for i := 0; i < cap(q.ch); i++ {
		if got := <-q.Reviews(); got.ReviewID != "fill" {
			t.Fatalf("got %+v, want the queued offers in order", got)
		}
	}
	select {
	case got := <-q.Reviews():
		t.Fatalf("the dropped offer was delivered: %+v", got)
	default:
	}
	// A cancelled context wins, even with room in the buffer.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := q.Emit(ctx, r); !errors.Is(err, context.Canceled) {
		t.Fatalf("Emit with a cancelled context: %v", err)
	}
	if len(q.ch) != 0 {
		t.Fatal("a cancelled Emit queued its review")
	}
}

func TestQueueDefaults(t *testing.T) {
	q := NewQueue(0, 0)
	if cap(q.ch) != DefaultQueueSize || q.wait != DefaultQueueWait {
		t.Fatalf("defaults: size %d wait %v", cap(q.ch), q.wait)
	}
}
