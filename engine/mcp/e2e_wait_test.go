package mcp_test

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine/e2e"
)

// decidedAt is when the gate of flow id was decided (e2e.GateDecidedAt).
func (s *server) decidedAt(id string) time.Time {
	s.t.Helper()
	out, err := s.cli("query", "flow", id)
	if err != nil {
		s.t.Fatalf("query flow: %v\n%s", err, out)
	}
	at, err := e2e.GateDecidedAt([]byte(out))
	if err != nil {
		s.t.Fatalf("%v:\n%s", err, out)
	}
	return at
}

// latencyBound is the p50 a waiter woken by the decision's commit stays
// under, above what a plain read through the same server costs at that
// moment, on a machine loaded ~20 on 2 cores too. It is a timing test: the
// delay counts the deciding process's commit (its fsync) and several
// wake-ups that load stretches (p50 up to 195 ms measured at load ~25 on 2
// cores, against 1–25 ms for the read; 30 ms was the bound), so a tight
// bound flakes. What it tells apart is a wake-up by the store's
// notification from one by the store's fallback poll (store.DefaultWatchPoll,
// 2 s: about 1.8 s here, the decision coming 150–250 ms into the wait). It
// no longer catches a poll of a few hundred ms or less: that Watch is woken
// by file-system events, not its poll, store checks structurally
// (TestWatchSeesOtherHandles, TestWatchAcrossProcesses: their fallback poll
// is a minute).
const latencyBound = time.Second

// TestWaitGateLatency: stratum_wait_gate answers promptly after `stratum
// gate approve` in another process — woken by the store's change
// notification, not a poll. The delay is measured from the decision (the
// gate record's time, taken by the deciding process before its commit, so
// it includes that commit's fsync) to the answer reaching this client, over
// several runs.
func TestWaitGateLatency(t *testing.T) { onBoth(t, testWaitGateLatency) }

func testWaitGateLatency(t *testing.T) {
	s := start(t)
	const runs = 9
	var lat, base []time.Duration
	for i := 0; i < runs; i++ {
		id, _ := s.plan("main", map[string]any{"x": "latency"}, nil)
		s.ok("stratum_step_done", map[string]any{"flow_id": id, "step_id": "build", "result": map[string]any{"ok": true}},
			map[string]any{"status": "await_gate"})
		type answer struct {
			r  map[string]any
			at time.Time
		}
		done := make(chan answer, 1)
		go func() {
			r, _ := s.call("stratum_wait_gate", map[string]any{"flow_id": id, "timeout_seconds": 30})
			done <- answer{r, time.Now()}
		}()
		// wait_gate is waiting, not starting to; the jitter keeps the
		// decision out of step with any periodic wake-up.
		time.Sleep(150*time.Millisecond + time.Duration(rand.IntN(100))*time.Millisecond)
		if out, err := s.cli("gate", "approve", id, "review"); err != nil {
			t.Fatalf("stratum gate approve: %v\n%s", err, out)
		}
		var a answer
		select {
		case a = <-done:
		case <-time.After(20 * time.Second):
			t.Fatal("wait_gate did not return after the decision")
		}
		expect(t, "wait_gate", a.r, map[string]any{"status": "complete", "flow_id": id})
		if _, timed := a.r["timed_out"]; timed {
			t.Fatalf("wait_gate timed out: %v", a.r)
		}
		lat = append(lat, a.at.Sub(s.decidedAt(id)))
		// The baseline, measured in the same moment: a read of the same
		// flow through the same server. On a loaded machine both grow; a
		// poll adds its half-interval on top whatever the load.
		began := time.Now()
		s.ok("stratum_audit", map[string]any{"flow_id": id}, nil)
		base = append(base, time.Since(began))
	}
	slices.Sort(lat)
	slices.Sort(base)
	p50, b50 := lat[len(lat)/2], base[len(base)/2]
	t.Logf("decision in another process -> wait_gate answered: min %v, p50 %v, max %v (n=%d); a read through the server: p50 %v", lat[0], p50, lat[len(lat)-1], len(lat), b50)
	if p50 >= latencyBound+b50 {
		t.Errorf("p50 %v (a read: %v): wait_gate is not woken by the decision", p50, b50)
	}
}
