package store

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/store/storetest"
)

// runHelpers starts one helper per flow (flows[i] for worker i) and waits
// for all of them; any helper error (including a lock error) fails the test.
func runHelpers(t *testing.T, mode, path string, flows []string, n int) []string {
	t.Helper()
	outs := make([]string, len(flows))
	var wg sync.WaitGroup
	errs := make([]error, len(flows))
	for w, flow := range flows {
		cmd := helperCmd(mode, path, flow, n, w)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := cmd.Wait(); err != nil {
				errs[w] = fmt.Errorf("helper %d: %v\n%s", w, err, stderr.String())
			}
			outs[w] = stdout.String()
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return outs
}

func processCount(t *testing.T) (procs, each int) {
	if testing.Short() {
		return 4, 100
	}
	return 4, 500
}

// TestProcessesSharedFlow: 4 processes × 500 transitions of one flow. Every
// committed transition is in the counter; the event log has one event per
// transition, in each process's own order.
func TestProcessesSharedFlow(t *testing.T) {
	procs, each := processCount(t)
	s := newTestStore(t, Options{})
	flows := make([]string, procs)
	for i := range flows {
		flows[i] = "shared"
	}
	runHelpers(t, "transitions", s.Path(), flows, each)

	st := storeGet(t, s, "shared")
	if got, want := st.Attempts["n"], procs*each; got != want {
		t.Fatalf("shared counter = %d, want %d: lost updates", got, want)
	}
	for w := 0; w < procs; w++ {
		if got := st.Attempts["w"+strconv.Itoa(w)]; got != each {
			t.Fatalf("worker %d counter = %d, want %d", w, got, each)
		}
	}
	if st.Version != int64(procs*each) {
		t.Fatalf("Version = %d, want %d", st.Version, procs*each)
	}
	checkEventOrder(t, s, procs, each)
}

// TestProcessesSeparateFlows: 4 processes × 500 transitions, each on its own flow.
func TestProcessesSeparateFlows(t *testing.T) {
	procs, each := processCount(t)
	s := newTestStore(t, Options{})
	flows := make([]string, procs)
	for i := range flows {
		flows[i] = fmt.Sprintf("flow-%d", i)
	}
	runHelpers(t, "transitions", s.Path(), flows, each)
	for _, f := range flows {
		if got := storeGet(t, s, f).Attempts["n"]; got != each {
			t.Fatalf("%s counter = %d, want %d", f, got, each)
		}
		evs, err := svcOf(s).Query().FlowEvents(bg, f)
		if err != nil || len(evs) != each {
			t.Fatalf("FlowEvents(%s) = %d events, %v; want %d", f, len(evs), err, each)
		}
	}
	checkEventOrder(t, s, procs, each)
}

// checkEventOrder: the global log holds procs*each events with strictly
// increasing sequence numbers, each process's events appear in the order
// that process committed them, and per-flow counters rise with the sequence.
func checkEventOrder(t *testing.T, s *Store, procs, each int) {
	t.Helper()
	evs, err := svcOf(s).Query().Events(bg, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != procs*each {
		t.Fatalf("log has %d events, want %d", len(evs), procs*each)
	}
	nextI := make([]int, procs)
	lastCounter := map[string]int{}
	for k, ev := range evs {
		if k > 0 && ev.Seq <= evs[k-1].Seq {
			t.Fatalf("seq %d after %d", ev.Seq, evs[k-1].Seq)
		}
		w, i, c := workerOf(ev)
		if i != nextI[w] {
			t.Fatalf("worker %d: event i=%d at seq %d, want i=%d", w, i, ev.Seq, nextI[w])
		}
		nextI[w]++
		if c != lastCounter[ev.FlowID]+1 {
			t.Fatalf("flow %s: counter %v at seq %d after %v", ev.FlowID, c, ev.Seq, lastCounter[ev.FlowID])
		}
		lastCounter[ev.FlowID] = c
	}
	if last, err := svcOf(s).Query().LastSeq(bg); err != nil || last != evs[len(evs)-1].Seq {
		t.Fatalf("LastSeq = %d, %v", last, err)
	}
}

// TestProcessesGateDecisions: 4 processes race to decide the same pending
// gates; every gate gets exactly one winner.
func TestProcessesGateDecisions(t *testing.T) {
	gates := 200
	if testing.Short() {
		gates = 50
	}
	s := newTestStore(t, Options{})
	if err := s.Update(bg, func(tx engine.Tx) error {
		for g := 0; g < gates; g++ {
			st := realisticState(fmt.Sprintf("gate-%d", g))
			st.Status = state.StatusAwaitingGate
			st.Gate = &state.PendingGate{StepID: "review", DispatchedAt: time.Now()}
			if err := storetest.Put(tx, st); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	outs := runHelpers(t, "gates", s.Path(), []string{"", "", "", ""}, gates)
	winners := map[string]int{}
	total := 0
	for w, out := range outs {
		for _, id := range parseLines(out, "won") {
			winners[id]++
			total++
			st := storeGet(t, s, id)
			n := 0
			for _, r := range st.Records {
				if r.Type == state.RecordGate {
					n++
					if r.Reviewer != "worker-"+strconv.Itoa(w) {
						t.Fatalf("%s won by worker %d but recorded for %s", id, w, r.Reviewer)
					}
				}
			}
			if n != 1 {
				t.Fatalf("%s has %d gate records, want 1", id, n)
			}
		}
	}
	if total != gates || len(winners) != gates {
		t.Fatalf("%d wins over %d gates (%d distinct), want exactly one per gate", total, gates, len(winners))
	}
	if p := storeGates(t, s); len(p) != 0 {
		t.Fatalf("%d gates still pending", len(p))
	}
	evs, err := svcOf(s).Query().Events(bg, 0, 0)
	if err != nil || len(evs) != gates {
		t.Fatalf("gate_resolved events = %d, %v; want %d", len(evs), err, gates)
	}
}

// TestCrashKill9 kills a helper with SIGKILL at random points of a stream of
// transitions, 50 times: the store opens every time, every transition the
// helper reported as committed is there (plus at most the one in flight),
// the event log agrees with the counter, and work continues.
func TestCrashKill9(t *testing.T) {
	rounds := 50
	if testing.Short() {
		rounds = 10
	}
	path := filepath.Join(t.TempDir(), FileName)
	if _, err := Open(path, Options{}); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	counter := 0
	for round := 0; round < rounds; round++ {
		cmd := helperCmd("crash", path, "crashy", 1<<30, round)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan int, 1<<16)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				if v, ok := parseCommitted(sc.Text()); ok {
					lines <- v
				}
			}
		}()
		// Kill at a random point once transitions are under way.
		reported := counter
		select {
		case v, ok := <-lines:
			if !ok {
				_ = cmd.Wait()
				t.Fatalf("round %d: helper exited early: %s", round, stderr.String())
			}
			reported = v
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: no transition committed", round)
		}
		time.Sleep(time.Duration(rng.IntN(8000)) * time.Microsecond)
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		for v := range lines {
			reported = v
		}
		_ = cmd.Wait()

		s, err := Open(path, Options{})
		if err != nil {
			t.Fatalf("round %d: reopen after kill -9: %v", round, err)
		}
		st := storeGet(t, s, "crashy")
		got := st.Attempts["n"]
		if got < reported || got > reported+1 {
			t.Fatalf("round %d: counter %d, helper reported %d committed", round, got, reported)
		}
		if got < counter {
			t.Fatalf("round %d: counter went back from %d to %d", round, counter, got)
		}
		evs, err := svcOf(s).Query().FlowEvents(bg, "crashy")
		if err != nil || len(evs) != got {
			t.Fatalf("round %d: %d events for counter %d (%v)", round, len(evs), got, err)
		}
		if err := s.Check(bg); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		counter = got
	}
	// Work continues after the last crash.
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := transition(s, "crashy", 99, 0); err != nil {
		t.Fatal(err)
	}
	if got := storeGet(t, s, "crashy").Attempts["n"]; got != counter+1 {
		t.Fatalf("after recovery: counter %d, want %d", got, counter+1)
	}
	t.Logf("%d kills, %d transitions committed", rounds, counter)
}

func parseCommitted(line string) (int, bool) {
	v, ok := bytes.CutPrefix([]byte(line), []byte("committed "))
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(string(v))
	return n, err == nil
}

// BenchmarkThroughput spawns 1 or 4 processes that share b.N transitions on
// separate flows and reports transitions per second across all of them.
func BenchmarkThroughput(b *testing.B) {
	for _, procs := range []int{1, 4} {
		b.Run(fmt.Sprintf("procs=%d", procs), func(b *testing.B) {
			s, err := Open(filepath.Join(b.TempDir(), FileName), Options{})
			if err != nil {
				b.Fatal(err)
			}
			each := max(1, b.N/procs)
			cmds := make([]*exec.Cmd, procs)
			for w := range cmds {
				cmds[w] = helperCmd("transitions", s.Path(), fmt.Sprintf("flow-%d", w), each, w)
			}
			b.ResetTimer()
			start := time.Now()
			for _, c := range cmds {
				if err := c.Start(); err != nil {
					b.Fatal(err)
				}
			}
			for _, c := range cmds {
				if err := c.Wait(); err != nil {
					b.Fatal(err)
				}
			}
			el := time.Since(start)
			b.ReportMetric(float64(each*procs)/el.Seconds(), "transitions/s")
		})
	}
}

// TestWatchAcrossProcesses: a Watch in this process delivers every event
// that helper processes commit, in order and once, woken by fsnotify (its
// fallback poll is a minute, so a test that relied on it would time out).
func TestWatchAcrossProcesses(t *testing.T) {
	procs, each := 3, 300
	if testing.Short() {
		procs, each = 2, 50
	}
	s := newTestStore(t, Options{WatchPoll: time.Minute})
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	w, err := s.Watch(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		evs  []engine.Event
		last time.Time
	}
	done := make(chan result, 1)
	go func() {
		var r result
		timeout := time.After(60 * time.Second)
		for len(r.evs) < procs*each {
			select {
			case batch, ok := <-w:
				if !ok {
					done <- r
					return
				}
				r.evs, r.last = append(r.evs, batch...), time.Now()
			case <-timeout:
				done <- r
				return
			}
		}
		done <- r
	}()
	flows := make([]string, procs)
	for i := range flows {
		flows[i] = fmt.Sprintf("flow-%d", i)
	}
	runHelpers(t, "transitions", s.Path(), flows, each)
	exited := time.Now()
	r := <-done
	if len(r.evs) != procs*each {
		t.Fatalf("Watch delivered %d of %d events", len(r.evs), procs*each)
	}
	logged, err := svcOf(s).Query().Events(bg, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range r.evs {
		if ev.Seq != logged[i].Seq || ev.FlowID != logged[i].FlowID || !reflect.DeepEqual(ev.Data, logged[i].Data) {
			t.Fatalf("delivered event %d is seq %d (%s), the log has seq %d (%s)", i, ev.Seq, ev.FlowID, logged[i].Seq, logged[i].FlowID)
		}
	}
	select {
	case extra := <-w:
		t.Fatalf("Watch delivered %d events more than were committed", len(extra))
	case <-time.After(100 * time.Millisecond):
	}
	t.Logf("%d events from %d processes; the last delivered %v after the helpers exited", len(r.evs), procs, r.last.Sub(exited))
}
