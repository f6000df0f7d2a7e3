package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stratum-go/stratum/engine"
)

// testGuards: a registration is read back as written and replaced by a
// put; ledger entries come back in order; an append that is not the next
// entry is ErrConflict and writes nothing; a failed transaction writes
// nothing; resources do not see each other's records; a read-only
// transaction writes none.
func testGuards(t *testing.T, s engine.Store) {
	ctx := context.Background()
	const a, b = "aaaa0000", "aaaa00001"
	view := func(fn func(tx engine.Tx) error) {
		t.Helper()
		if err := s.View(ctx, fn); err != nil {
			t.Fatal(err)
		}
	}
	view(func(tx engine.Tx) error {
		if _, ok, err := tx.GuardGet(a); ok || err != nil {
			t.Errorf("GuardGet of nothing: %v %v", ok, err)
		}
		if es, err := tx.GuardEntries(a); len(es) != 0 || err != nil {
			t.Errorf("GuardEntries of nothing: %q %v", es, err)
		}
		if err := tx.GuardPut(a, []byte("x")); err == nil {
			t.Error("GuardPut in a read-only transaction")
		}
		return nil
	})
	err := s.Update(ctx, func(tx engine.Tx) error {
		if err := tx.GuardPut(a, []byte(`{"v":1}`)); err != nil {
			return err
		}
		for i, e := range []string{"e0", "e1"} {
			if err := tx.GuardAppend(a, i, []byte(e)); err != nil {
				return err
			}
		}
		if err := tx.GuardAppend(a, 5, []byte("gap")); !errors.Is(err, engine.ErrConflict) {
			t.Errorf("append past the end: %v", err)
		}
		if err := tx.GuardAppend(a, 1, []byte("again")); !errors.Is(err, engine.ErrConflict) {
			t.Errorf("append over an entry: %v", err)
		}
		return tx.GuardAppend(b, 0, []byte("other"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(ctx, func(tx engine.Tx) error {
		if err := tx.GuardAppend(a, 2, []byte("rolled back")); err != nil {
			return err
		}
		return errors.New("abort")
	}); err == nil {
		t.Fatal("the aborted update succeeded")
	}
	if err := s.Update(ctx, func(tx engine.Tx) error { return tx.GuardPut(a, []byte(`{"v":2}`)) }); err != nil {
		t.Fatal(err)
	}
	view(func(tx engine.Tx) error {
		reg, ok, err := tx.GuardGet(a)
		if !ok || err != nil || string(reg) != `{"v":2}` {
			t.Errorf("registration %q %v %v", reg, ok, err)
		}
		es, err := tx.GuardEntries(a)
		if err != nil || fmt.Sprintf("%q", es) != `["e0" "e1"]` {
			t.Errorf("entries %q %v", es, err)
		}
		es, err = tx.GuardEntries(b)
		if err != nil || fmt.Sprintf("%q", es) != `["other"]` {
			t.Errorf("the other resource's entries %q %v", es, err)
		}
		if _, ok, _ := tx.GuardGet(b); ok {
			t.Error("a registration for a resource that has none")
		}
		if keys, err := tx.GuardKeys(); err != nil || fmt.Sprint(keys) != "["+a+"]" {
			t.Errorf("GuardKeys: %v %v (want the registered one only)", keys, err)
		}
		return nil
	})
}

// testGuardsConcurrentAppend: writers racing to append to one ledger, each
// appending at the length it read, all succeed in turn (a writer that lost
// the race runs again) and leave one entry each, none overwritten.
func testGuardsConcurrentAppend(t *testing.T, s engine.Store) {
	ctx := context.Background()
	const key, n = "cccc1111", 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- s.Update(ctx, func(tx engine.Tx) error {
				es, err := tx.GuardEntries(key)
				if err != nil {
					return err
				}
				return tx.GuardAppend(key, len(es), []byte(fmt.Sprint(i)))
			})
		}()
	}
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if err != nil {
			if !errors.Is(err, engine.ErrConflict) {
				t.Errorf("append: %v", err)
			}
			failed++
		}
	}
	_ = s.View(ctx, func(tx engine.Tx) error {
		es, err := tx.GuardEntries(key)
		if err != nil || len(es)+failed != n {
			t.Errorf("%d entries and %d conflicts of %d writers (%v)", len(es), failed, n, err)
		}
		seen := map[string]bool{}
		for _, e := range es {
			if seen[string(e)] {
				t.Errorf("entry %s twice", e)
			}
			seen[string(e)] = true
		}
		return nil
	})
}
