package etcdstore

import (
	"context"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/store/etcdstore/etcdtest"
)

// TestWatchCompacted: an etcd watch that starts below the cluster's
// compacted revision is cancelled by etcd; Watch re-reads the log and
// watches again, delivering every event once, pushed (well before the
// poll fallback would).
func TestWatchCompacted(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	s, err := Open(ctx, Options{Endpoints: c.Endpoints, Prefix: "/compact/"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	appendOne := func(step string) {
		t.Helper()
		if err := s.Update(ctx, func(tx engine.Tx) error {
			return tx.Append(engine.Event{FlowID: "f", Type: engine.EventStepDone, StepID: step})
		}); err != nil {
			t.Fatal(err)
		}
	}
	for _, step := range []string{"a", "b", "c"} {
		appendOne(step)
	}
	r, err := s.cli.Get(ctx, s.key("meta/seq"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.cli.Compact(ctx, r.Header.Revision); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := s.watch(wctx, 0, 2) // revision 2 is compacted
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	deadline := time.After(10 * time.Second)
	for len(got) < 6 {
		if len(got) == 3 {
			appendOne("d")
			appendOne("e")
			// Well before the poll fallback: the watch itself wakes us.
			deadline = time.After(watchPoll / 3)
			got = append(got, "") // marks the appends as done
		}
		select {
		case b, ok := <-w:
			if !ok {
				t.Fatal("Watch closed")
			}
			for _, e := range b {
				got = append(got, e.StepID)
			}
		case <-deadline:
			t.Fatalf("Watch delivered %v, then nothing for 10s", got)
		}
	}
	if want := "abcde"; joined(got) != want || len(got) != 6 {
		t.Fatalf("Watch delivered %v, want %s once each", got, want)
	}
	if n := s.watchReads.Load(); n > 10 {
		t.Fatalf("Watch read the log %d times for 2 wake-ups: it spins instead of watching", n)
	}
}

func joined(ss []string) string {
	out := ""
	for _, s := range ss {
		out += s
	}
	return out
}
