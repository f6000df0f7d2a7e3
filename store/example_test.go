package store_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/store"
)

// A transition is one read-modify-write inside one Update; a reader reads
// the event log by sequence number.
func Example() {
	home, _ := os.MkdirTemp("", "stratum-home")
	defer os.RemoveAll(home)
	ctx := context.Background()

	s, err := store.Open(filepath.Join(home, store.FileName), store.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	err = s.Update(ctx, func(tx engine.Tx) error {
		st := &state.FlowState{FlowID: "f1", FlowName: "review", Status: state.StatusAwaitingGate,
			Gate: &state.PendingGate{StepID: "approve"}}
		expect := st.Stamp(time.Now()) // the stamps are the writer's
		if err := tx.Put(st, engine.Summarize(st, nil), expect); err != nil {
			return err
		}
		return tx.Append(engine.Event{FlowID: "f1", Type: engine.EventGateOpened, StepID: "approve"})
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	var gates []state.FlowSummary
	_ = s.View(ctx, func(tx engine.Tx) error {
		gates, err = tx.PendingGates()
		return err
	})
	fmt.Println("pending:", gates[0].FlowID, gates[0].Gate.StepID, "version", gates[0].Version)

	var events []engine.Event
	_ = s.View(ctx, func(tx engine.Tx) error {
		events, err = tx.Events(0, 10)
		return err
	})
	for _, ev := range events {
		fmt.Println(ev.Seq, ev.FlowID, ev.Type)
	}
	// Output:
	// pending: f1 approve version 1
	// 1 f1 gate_opened
}
