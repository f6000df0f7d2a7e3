package etcdstore_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/store/etcdstore"
	"github.com/stratum-go/stratum/store/etcdstore/etcdtest"
	"github.com/stratum-go/stratum/store/storetest"
)

const (
	faultClients     = 4
	faultTransitions = 200
	faultGates       = 20 // each client tries to decide gate i/10 at transition i
)

// clientReport is what a fault client prints when it is done.
type clientReport struct {
	Client    int      `json:"client"`
	Applied   int      `json:"applied"`   // transitions this client saw committed
	Won       []string `json:"won"`       // gates it decided
	Errors    []string `json:"errors"`    // every error it got (and retried)
	Ambiguous int      `json:"ambiguous"` // retries that found the transition already applied
}

// TestFault: three members, four client processes each making 200
// transitions on a shared counter and racing each other to decide 20 gates;
// the leader is stopped half-way. No transition is lost or applied twice,
// every gate has exactly one winner, and every error a client got was one
// clear line it could retry after.
func TestFault(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-member cluster and 4 processes")
	}
	c := etcdtest.Start(t, 3)
	prefix := "/fault/"
	s := open(t, c, prefix)
	// The shared counter and the gates.
	if err := s.Update(context.Background(), func(tx engine.Tx) error {
		if err := storetest.Put(tx, storetest.NewState("counter", state.StatusRunning)); err != nil {
			return err
		}
		for g := 0; g < faultGates; g++ {
			st := storetest.NewState(fmt.Sprintf("gate-%02d", g), state.StatusAwaitingGate)
			st.Gate = &state.PendingGate{StepID: "review"}
			if err := storetest.Put(tx, st); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	reports := make([]clientReport, faultClients)
	progress := make(chan int, faultClients*faultTransitions)
	for k := 0; k < faultClients; k++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestFaultClient$", "-test.v")
		cmd.Env = append(os.Environ(), "STRATUM_FAULT_ENDPOINTS="+strings.Join(c.Endpoints, ","),
			"STRATUM_FAULT_PREFIX="+prefix, "STRATUM_FAULT_CLIENT="+strconv.Itoa(k), "STRATUM_HOME="+t.TempDir())
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := bufio.NewScanner(out)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				line := sc.Text()
				if rest, ok := strings.CutPrefix(line, "PROGRESS "); ok {
					n, _ := strconv.Atoi(rest)
					progress <- n
				}
				if rest, ok := strings.CutPrefix(line, "REPORT "); ok {
					_ = json.Unmarshal([]byte(rest), &reports[k])
				}
			}
			if err := cmd.Wait(); err != nil {
				t.Errorf("client %d: %v", k, err)
			}
		}()
	}
	// Stop the leader when half the transitions are done.
	done := 0
	deadline := time.After(3 * time.Minute)
	for done < faultClients*faultTransitions/2 {
		select {
		case <-progress:
			done++
		case <-deadline:
			t.Fatalf("only %d transitions in 3 minutes\n%s", done, c.Logs())
		}
	}
	leader := c.Leader()
	if leader < 0 {
		t.Fatal("no leader to stop")
	}
	t.Logf("stopping leader m%d after %d transitions", leader, done)
	c.Stop(leader)
	go func() {
		for range progress {
		}
	}()
	wg.Wait()
	close(progress)

	// Check with a client on the surviving members.
	var alive []string
	for i, ep := range c.Endpoints {
		if i != leader {
			alive = append(alive, ep)
		}
	}
	s2, err := etcdstore.Open(context.Background(), etcdstore.Options{Endpoints: alive, Prefix: prefix, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	var counter *state.FlowState
	var evs []engine.Event
	winners := map[string]string{}
	if err := s2.View(context.Background(), func(tx engine.Tx) error {
		var err error
		if counter, err = tx.Get("counter"); err != nil {
			return err
		}
		for g := 0; g < faultGates; g++ {
			st, err := tx.Get(fmt.Sprintf("gate-%02d", g))
			if err != nil {
				return err
			}
			if st.Status != state.StatusRunning || st.Gate != nil {
				return fmt.Errorf("gate %s not decided: %s", st.FlowID, st.Status)
			}
			winners[st.FlowID] = st.FlowName
		}
		evs, err = tx.Events(0, 0)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if got := counter.Attempts["n"]; got != faultClients*faultTransitions {
		t.Errorf("counter = %d, want %d: transitions lost or applied twice", got, faultClients*faultTransitions)
	}
	seen := map[string]int{}
	gateEvents := map[string][]string{}
	for i, e := range evs {
		if i > 0 && e.Seq <= evs[i-1].Seq {
			t.Errorf("event log out of order: %d after %d", e.Seq, evs[i-1].Seq)
		}
		switch e.Type {
		case engine.EventStepDone:
			seen[e.StepID]++
		case engine.EventGateResolved:
			gateEvents[e.FlowID] = append(gateEvents[e.FlowID], e.StepID)
		}
	}
	for k := 0; k < faultClients; k++ {
		for i := 1; i <= faultTransitions; i++ {
			if n := seen[fmt.Sprintf("c%d-%d", k, i)]; n != 1 {
				t.Errorf("transition %d of client %d logged %d times", i, k, n)
			}
		}
	}
	won := map[string]int{}
	errs := 0
	for _, r := range reports {
		for _, g := range r.Won {
			won[g]++
		}
		for _, e := range r.Errors {
			errs++
			if strings.Contains(e, "\n") || !strings.HasPrefix(e, "etcd store etcd://") {
				t.Errorf("client %d got an unclear error: %q", r.Client, e)
			}
		}
		if r.Applied != faultTransitions {
			t.Errorf("client %d finished %d of %d transitions", r.Client, r.Applied, faultTransitions)
		}
	}
	for g := 0; g < faultGates; g++ {
		id := fmt.Sprintf("gate-%02d", g)
		if len(gateEvents[id]) != 1 {
			t.Errorf("gate %s resolved %d times: %v", id, len(gateEvents[id]), gateEvents[id])
		}
		if won[id] > 1 {
			t.Errorf("gate %s won by %d clients", id, won[id])
		}
		if w := winners[id]; len(gateEvents[id]) == 1 && gateEvents[id][0] != w {
			t.Errorf("gate %s: state says %s won, the log %s", id, w, gateEvents[id][0])
		}
	}
	t.Logf("%d events, %d errors retried by clients, winners %v", len(evs), errs, won)
}

func open(t *testing.T, c *etcdtest.Cluster, prefix string) *etcdstore.Store {
	t.Helper()
	s, err := etcdstore.Open(context.Background(), etcdstore.Options{Endpoints: c.Endpoints, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestFaultClient is one client process of TestFault (it runs only there).
func TestFaultClient(t *testing.T) {
	eps := os.Getenv("STRATUM_FAULT_ENDPOINTS")
	if eps == "" {
		t.Skip("a client process of TestFault")
	}
	k, _ := strconv.Atoi(os.Getenv("STRATUM_FAULT_CLIENT"))
	s, err := etcdstore.Open(context.Background(), etcdstore.Options{Endpoints: strings.Split(eps, ","), Prefix: os.Getenv("STRATUM_FAULT_PREFIX"), Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	me := fmt.Sprintf("c%d", k)
	rep := clientReport{Client: k, Won: []string{}, Errors: []string{}}
	retry := func(what string, fn func() error) {
		for attempt := 0; ; attempt++ {
			err := fn()
			if err == nil {
				return
			}
			rep.Errors = append(rep.Errors, err.Error())
			var e *etcdstore.Error
			if !errors.As(err, &e) || attempt > 20 {
				t.Fatalf("%s: %v", what, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	for i := 1; i <= faultTransitions; i++ {
		step := fmt.Sprintf("%s-%d", me, i)
		retry(step, func() error {
			return s.Update(context.Background(), func(tx engine.Tx) error {
				st, err := tx.Get("counter")
				if err != nil {
					return err
				}
				// A retry after an ambiguous failure (the commit went through,
				// its answer was lost) finds its own mark: nothing to do.
				if st.Inputs[me] == float64(i) {
					rep.Ambiguous++
					return nil
				}
				st.Attempts["n"]++
				st.Inputs[me] = float64(i)
				if err := storetest.Put(tx, st); err != nil {
					return err
				}
				return tx.Append(engine.Event{FlowID: "counter", Type: engine.EventStepDone, StepID: step})
			})
		})
		rep.Applied++
		fmt.Printf("PROGRESS %d\n", i)
		if i%10 == 0 {
			gate := fmt.Sprintf("gate-%02d", i/10-1)
			var won bool
			retry(gate, func() error {
				return s.Update(context.Background(), func(tx engine.Tx) error {
					won = false
					st, err := tx.Get(gate)
					if err != nil {
						return err
					}
					if st.Status != state.StatusAwaitingGate {
						return nil
					}
					if st.FlowName == me { // our own ambiguous commit
						return nil
					}
					st.Status, st.Gate, st.FlowName = state.StatusRunning, nil, me
					won = true
					if err := storetest.Put(tx, st); err != nil {
						return err
					}
					return tx.Append(engine.Event{FlowID: gate, Type: engine.EventGateResolved, StepID: me})
				})
			})
			if won {
				rep.Won = append(rep.Won, gate)
			}
		}
	}
	b, _ := json.Marshal(rep)
	fmt.Printf("REPORT %s\n", b)
}
