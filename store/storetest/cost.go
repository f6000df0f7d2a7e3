package storetest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/specs/exprlang"
)

// Cost is what a backend counted so far (cumulative): its operations, the
// bytes it was asked to store, and the size of its database. A Meter reads
// it (the etcd store: the members' /metrics).
type Cost struct {
	Puts, Deletes, Ranges, Txns float64
	// PutBytes is the size of every key and value put.
	PutBytes float64
	// DBBytes is the database's size in use (a gauge, not a counter).
	DBBytes float64
}

// Ops is every operation the backend counts: puts, deletes, ranges (a
// transaction's compares included, as etcd counts them) and transactions.
func (c Cost) Ops() float64 { return c.Puts + c.Deletes + c.Ranges + c.Txns }

// Sub is the cost between two readings (DBBytes: the growth).
func (c Cost) Sub(o Cost) Cost {
	return Cost{c.Puts - o.Puts, c.Deletes - o.Deletes, c.Ranges - o.Ranges, c.Txns - o.Txns, c.PutBytes - o.PutBytes, c.DBBytes - o.DBBytes}
}

// Per is the cost divided by n (per transition).
func (c Cost) Per(n float64) Cost {
	return Cost{c.Puts / n, c.Deletes / n, c.Ranges / n, c.Txns / n, c.PutBytes / n, c.DBBytes / n}
}

func (c Cost) String() string {
	return fmt.Sprintf("%.1f ops (%.1f puts, %.1f deletes, %.1f ranges, %.1f txns), %.0f B put, %+.0f B database",
		c.Ops(), c.Puts, c.Deletes, c.Ranges, c.Txns, c.PutBytes, c.DBBytes)
}

// Meter reads the backend's cumulative Cost.
type Meter func(t testing.TB) Cost

// CostOptions configure RunTransitionCost.
type CostOptions struct {
	// Transitions is how many transitions to write (0: 5,000), in windows
	// of Window (0: 1,000).
	Transitions, Window int
	// MaxOps, MaxPutBytes and MaxDBBytes bound the operations, the bytes
	// put and the growth of the database per transition in every window
	// (0: no bound).
	MaxOps, MaxPutBytes, MaxDBBytes float64
}

// Window is what one window of RunTransitionCost measured: the cost per
// transition, the transitions per second, and the database's size in use
// at its end (Size).
type Window struct {
	Cost
	Rate float64
	Size float64
}

// costSpec is the flow RunTransitionCost drives: ten steps in a chain, each
// with an output contract, as an agent's flow over MCP.
var costSpec = func() string {
	var b strings.Builder
	b.WriteString("version: \"0.2\"\ncontracts:\n  Out:\n    summary: {type: string}\n    score: {type: number}\n")
	b.WriteString("flows:\n  main:\n    input: {task: {type: string}}\n    steps:\n")
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&b, "      - id: s%d\n        intent: \"Do part %d of the task and score it\"\n        inputs: {task: \"$.input.task\"}\n        output_contract: Out\n        ensure: [\"result.score > 0.5\"]\n", i, i)
		if i > 0 {
			fmt.Fprintf(&b, "        depends_on: [s%d]\n", i-1)
		}
	}
	return b.String()
}()

// RunTransitionCost measures what transitions cost the backend as history
// grows: one engine.Service per handle (handles: one store opened several
// times, as separate processes would), each with a watcher following the
// log as stratum mcp's deadline enforcer does, writes opt.Transitions
// transitions (stratum_plan, then stratum_step_done through a ten-step
// flow, over and over) in windows of opt.Window; after each window meter
// is read. It fails when a window's operations, bytes put or database
// growth per transition exceed the bounds, or when the last window's
// operations per transition exceed the first's by more than a tenth (plus
// half an operation: a watcher's reads vary with timing): the cost of a
// transition must not grow with the history. It returns each window's cost
// per transition and rate.
func RunTransitionCost(t testing.TB, handles []engine.Store, meter Meter, opt CostOptions) []Window {
	t.Helper()
	if opt.Transitions <= 0 {
		opt.Transitions = 5000
	}
	if opt.Window <= 0 {
		opt.Window = 1000
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clients := make([]*costClient, len(handles))
	var watchers sync.WaitGroup
	for i, h := range handles {
		svc := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: h}
		clients[i] = &costClient{svc: svc, task: strings.Repeat(fmt.Sprintf("client %d ", i), 20)}
		watchers.Add(1)
		go func() {
			defer watchers.Done()
			_ = svc.EnforceDeadlines(ctx, time.Second, func(int, error) {})
		}()
	}
	defer watchers.Wait()
	defer cancel()
	time.Sleep(100 * time.Millisecond) // the watchers are watching
	var out []Window
	prev := meter(t)
	for done := 0; done < opt.Transitions; done += opt.Window {
		n := min(opt.Window, opt.Transitions-done)
		t0 := time.Now()
		var wg sync.WaitGroup
		errs := make([]error, len(clients))
		for i, c := range clients {
			share := n / len(clients)
			if i < n%len(clients) {
				share++
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = c.transitions(ctx, share)
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(50 * time.Millisecond) // the watchers read what they were woken for
		cur := meter(t)
		per := cur.Sub(prev).Per(float64(n))
		prev = cur
		w := Window{Cost: per, Rate: float64(n) / time.Since(t0).Seconds(), Size: cur.DBBytes}
		out = append(out, w)
		t.Logf("transitions %6d–%6d: %s; %.0f/s", done+1, done+n, per, w.Rate)
		if opt.MaxOps > 0 && per.Ops() > opt.MaxOps {
			t.Errorf("transitions %d–%d: %.1f operations per transition, want at most %.0f", done+1, done+n, per.Ops(), opt.MaxOps)
		}
		if opt.MaxPutBytes > 0 && per.PutBytes > opt.MaxPutBytes {
			t.Errorf("transitions %d–%d: %.0f bytes put per transition, want at most %.0f", done+1, done+n, per.PutBytes, opt.MaxPutBytes)
		}
		if opt.MaxDBBytes > 0 && per.DBBytes > opt.MaxDBBytes {
			t.Errorf("transitions %d–%d: the database grew %.0f bytes per transition, want at most %.0f", done+1, done+n, per.DBBytes, opt.MaxDBBytes)
		}
	}
	if first, last := out[0].Ops(), out[len(out)-1].Ops(); len(out) > 1 && last > first*1.1+0.5 {
		t.Errorf("operations per transition grew with the history: %.1f in the first window, %.1f in the last", first, last)
	}
	return out
}

// costClient drives one flow after another through its steps.
type costClient struct {
	svc    *engine.Service
	task   string
	flowID string
	next   string
}

// transitions makes n transitions: a plan when no flow is under way, else
// the step_done of the step dispatched.
func (c *costClient) transitions(ctx context.Context, n int) error {
	for range n {
		var out engine.Outcome
		var err error
		if c.flowID == "" {
			out, err = c.svc.Plan(ctx, costSpec, "main", map[string]any{"task": c.task}, engine.PlanOptions{})
		} else {
			result := map[string]any{"summary": "done: " + c.next + " " + c.task[:80], "score": 0.9}
			out, err = c.svc.StepDone(ctx, engine.StepReport{FlowID: c.flowID, StepID: c.next, Result: result})
		}
		if err != nil {
			return err
		}
		switch o := out.(type) {
		case *engine.StepDispatch:
			c.flowID, c.next = o.FlowID, o.StepID
		case *engine.Completion:
			c.flowID, c.next = "", ""
		default:
			return fmt.Errorf("unexpected answer %T %+v", out, out)
		}
	}
	return nil
}
