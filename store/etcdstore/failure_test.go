package etcdstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/store/etcdstore"
	"github.com/stratum-go/stratum/store/etcdstore/etcdtest"
	"github.com/stratum-go/stratum/store/storetest"
)

// TestLostQuorum: with two of three members gone, a transition fails
// within the timeout with one line naming the endpoints; a read fails the
// same way; a watcher neither closes its channel nor invents events.
func TestLostQuorum(t *testing.T) {
	c := etcdtest.Start(t, 3)
	s, err := etcdstore.Open(context.Background(), etcdstore.Options{Endpoints: c.Endpoints, Prefix: "/quorum/", Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Update(context.Background(), func(tx engine.Tx) error {
		return storetest.Put(tx, storetest.NewState("f", state.StatusAwaitingGate))
	}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := s.Watch(wctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	c.Stop(1)
	c.Stop(2)
	t0 := time.Now()
	err = s.Update(context.Background(), func(tx engine.Tx) error {
		st, err := tx.Get("f")
		if err != nil {
			return err
		}
		st.Status = state.StatusRunning
		if err := storetest.Put(tx, st); err != nil {
			return err
		}
		return tx.Append(engine.Event{FlowID: "f", Type: engine.EventGateResolved})
	})
	d := time.Since(t0)
	if err == nil {
		t.Fatal("a transition without quorum succeeded")
	}
	if d > 3*time.Second {
		t.Errorf("failed after %v with a 1s timeout", d)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "etcd store etcd://127.0.0.1:") || strings.Contains(msg, "\n") || !errors.Is(err, etcdstore.ErrUnavailable) {
		t.Errorf("error without quorum: %q (errors.Is ErrUnavailable: %v)", msg, errors.Is(err, etcdstore.ErrUnavailable))
	}
	t.Logf("after %v: %v", d.Round(time.Millisecond), err)
	if err := s.View(context.Background(), func(tx engine.Tx) error { _, err := tx.Get("f"); return err }); err == nil {
		t.Error("a linearizable read without quorum succeeded")
	}
	select {
	case b, ok := <-w:
		if !ok {
			t.Fatal("Watch closed its channel when the quorum was lost")
		}
		t.Fatalf("Watch delivered %v without a commit", b)
	case <-time.After(300 * time.Millisecond):
	}
}
