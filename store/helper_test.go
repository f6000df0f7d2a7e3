package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/specs/exprlang"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/store/storetest"
)

// The tests re-execute the test binary as helper processes to exercise the
// store across real processes. The helper mode is selected by env vars.
const (
	envMode   = "STRATUM_STORE_HELPER" // transitions | crash | gates
	envPath   = "STRATUM_STORE_PATH"
	envFlow   = "STRATUM_STORE_FLOW"   // flow id to transition
	envN      = "STRATUM_STORE_N"      // transitions to make (or gates to try)
	envWorker = "STRATUM_STORE_WORKER" // worker number, recorded in events
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(envMode); mode != "" {
		if err := runHelper(mode); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// helperCmd builds the command for one helper process.
func helperCmd(mode, path, flow string, n, worker int) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		envMode+"="+mode, envPath+"="+path, envFlow+"="+flow,
		envN+"="+strconv.Itoa(n), envWorker+"="+strconv.Itoa(worker))
	return cmd
}

func runHelper(mode string) error {
	s, err := Open(os.Getenv(envPath), Options{})
	if err != nil {
		return err
	}
	n, _ := strconv.Atoi(os.Getenv(envN))
	worker, _ := strconv.Atoi(os.Getenv(envWorker))
	flow := os.Getenv(envFlow)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	switch mode {
	case "transitions":
		for i := 0; i < n; i++ {
			if err := transition(s, flow, worker, i); err != nil {
				return err
			}
		}
		fmt.Fprintf(out, "done %d\n", n)
	case "crash":
		// Print each committed counter as soon as Update returns, unbuffered,
		// until killed.
		for i := 0; i < n; i++ {
			var counter int
			if err := s.Update(context.Background(), func(tx engine.Tx) error {
				c, err := step(tx, flow, worker, i)
				counter = c
				return err
			}); err != nil {
				return err
			}
			fmt.Fprintf(os.Stdout, "committed %d\n", counter)
		}
	case "gates":
		// Try to decide gates gate-0 … gate-(n-1), first writer wins.
		for g := 0; g < n; g++ {
			id := fmt.Sprintf("gate-%d", g)
			won := false
			if err := s.Update(context.Background(), func(tx engine.Tx) error {
				won = false
				st, err := tx.Get(id)
				if err != nil {
					return err
				}
				if st.Status != state.StatusAwaitingGate || st.Gate == nil {
					return nil // someone else decided it
				}
				st.Records = append(st.Records, state.Record{Type: state.RecordGate, StepID: st.Gate.StepID,
					Outcome: "approve", Reviewer: "worker-" + strconv.Itoa(worker), Channel: "cli"})
				st.Status, st.Gate = state.StatusRunning, nil
				won = true
				if err := storetest.Put(tx, st); err != nil {
					return err
				}
				return tx.Append(engine.Event{FlowID: id, Type: engine.EventGateResolved,
					Data: engine.GateResolved{Outcome: "approve", Round: worker}})
			}); err != nil {
				return err
			}
			if won {
				fmt.Fprintf(out, "won %s\n", id)
			}
		}
	default:
		return fmt.Errorf("unknown helper mode %q", mode)
	}
	return nil
}

// transition is one durable transition of flow: counter +1, one event.
func transition(s *Store, flow string, worker, i int) error {
	return s.Update(context.Background(), func(tx engine.Tx) error {
		_, err := step(tx, flow, worker, i)
		return err
	})
}

// step increments the flow's counter (Attempts["n"]) and the worker's own
// (Attempts["w<worker>"]), creating the flow if needed, and appends one
// event carrying the worker, i and the new counter.
func step(tx engine.Tx, flow string, worker, i int) (int, error) {
	st, err := tx.Get(flow)
	if errors.Is(err, engine.ErrNotFound) {
		st, err = realisticState(flow), nil
		st.Attempts = map[string]int{}
	}
	if err != nil {
		return 0, err
	}
	st.Attempts["n"]++
	st.Attempts["w"+strconv.Itoa(worker)]++
	if err := storetest.Put(tx, st); err != nil {
		return 0, err
	}
	return st.Attempts["n"], tx.Append(engine.Event{FlowID: flow, Type: engine.EventTrace, StepID: "s5",
		Data: workerCall(worker, i, st.Attempts["n"])})
}

// svcOf is the engine service over s, for its event-log reads.
func svcOf(s *Store) *engine.Service { return &engine.Service{ParseSpec: exprlang.ParseSpec, Store: s} }

// parseLines returns the lines of helper output starting with prefix.
func parseLines(out, prefix string) []string {
	var vals []string
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, prefix+" "); ok {
			vals = append(vals, v)
		}
	}
	return vals
}

// workerCall is the event a helper process's transition appends: a call
// whose fields carry the worker, its i-th transition and the flow's
// counter (workerOf reads them back).
func workerCall(worker, i, counter int) engine.Trace {
	return engine.Trace{DurationMS: int64(worker), Tokens: int64(i), Attempt: counter}
}

// workerOf reads an event workerCall made.
func workerOf(ev engine.Event) (worker, i, counter int) {
	d, _ := ev.Data.(engine.Trace)
	return int(d.DurationMS), int(d.Tokens), d.Attempt
}
