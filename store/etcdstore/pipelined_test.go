package etcdstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/store/etcdstore"
	"github.com/stratum-go/stratum/store/etcdstore/etcdtest"
	"github.com/stratum-go/stratum/store/storetest"
)

// TestPipelinedCreates: four handles on a 3-member cluster, each with 64
// flow creations (a state and two events, as stratum_plan writes) in
// flight at once, all commit: creations of different flows share no key,
// so none loses a race and none runs out of attempts (schema 2's shared
// meta/seq made them retry until the timeout: issue 21's internal_error),
// and the log holds every event once, numbers strictly increasing.
func TestPipelinedCreates(t *testing.T) {
	const handles, inFlight = 4, 64
	c := etcdtest.Start(t, 3)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, handles*inFlight)
	var first *etcdstore.Store
	for h := range handles {
		s, err := etcdstore.Open(ctx, etcdstore.Options{Endpoints: c.Endpoints[h%len(c.Endpoints):], Prefix: "/pipelined/"})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if h == 0 {
			first = s
		}
		for i := range inFlight {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id := fmt.Sprintf("plan-%d-%d", h, i)
				errs <- s.Update(ctx, func(tx engine.Tx) error {
					if err := storetest.Put(tx, storetest.NewState(id, state.StatusRunning)); err != nil {
						return err
					}
					return tx.Append(engine.Event{FlowID: id, Type: engine.EventFlowCreated},
						engine.Event{FlowID: id, Type: engine.EventStepDispatched, StepID: "s1"})
				})
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a creation failed: %v", err)
		}
	}
	var evs []engine.Event
	if err := first.View(ctx, func(tx engine.Tx) (err error) { evs, err = tx.Events(0, 0); return err }); err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2*handles*inFlight {
		t.Fatalf("%d events in the log, want %d", len(evs), 2*handles*inFlight)
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].Seq <= evs[i-1].Seq {
			t.Fatalf("event %d numbered %d after %d", i, evs[i].Seq, evs[i-1].Seq)
		}
	}
}
