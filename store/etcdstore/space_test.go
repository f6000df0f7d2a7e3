package etcdstore_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/store/etcdstore"
	"github.com/stratum-go/stratum/store/etcdstore/etcdtest"
	"github.com/stratum-go/stratum/store/storetest"
)

// TestNoSpace fills a member whose quota is 8 MiB with the history of one
// flow rewritten over and over: the write etcd refuses fails with one line
// that says the cluster is out of space and what to do (errors.Is
// ErrNoSpace), writes nothing, and loses nothing written before; reads go
// on; Compact with Defrag compacts, defragments, disarms the alarm, and
// writes work again.
func TestNoSpace(t *testing.T) {
	c := etcdtest.StartWith(t, etcdtest.Options{QuotaBackendBytes: 8 << 20})
	ctx := context.Background()
	s, err := etcdstore.Open(ctx, etcdstore.Options{Endpoints: c.Endpoints, Prefix: "full"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st := storetest.NewState("f", state.StatusRunning)
	// 64 KiB that do not deflate (the store packs states).
	noise := make([]byte, 48<<10)
	_, _ = rand.NewChaCha8([32]byte{}).Read(noise)
	st.Inputs["doc"] = base64.StdEncoding.EncodeToString(noise)
	var full error
	writes := 0
	for i := 0; i < 1000 && full == nil; i++ {
		full = s.Update(ctx, func(tx engine.Tx) error {
			cur, err := tx.Get("f")
			if err != nil && !errors.Is(err, engine.ErrNotFound) {
				return err
			}
			next := *st
			next.Version = 0
			if cur != nil {
				next.Version = cur.Version
			}
			next.Round = i
			return storetest.Put(tx, &next)
		})
		if full == nil {
			writes++
		}
	}
	if full == nil {
		t.Fatal("1000 writes of 64 KiB fit a quota of 8 MiB")
	}
	if !errors.Is(full, etcdstore.ErrNoSpace) {
		t.Fatalf("the write refused: %v, want ErrNoSpace", full)
	}
	msg := full.Error()
	for _, want := range []string{"etcd store etcd://", "out of space", "nothing was written", "stratum store compact --defrag"} {
		if !strings.Contains(msg, want) || strings.Contains(msg, "\n") {
			t.Fatalf("message %q: want one line with %q", msg, want)
		}
	}
	// Nothing lost: the last write that succeeded is there.
	var got *state.FlowState
	if err := s.View(ctx, func(tx engine.Tx) (err error) { got, err = tx.Get("f"); return err }); err != nil {
		t.Fatalf("read during NOSPACE: %v", err)
	}
	if got.Round != writes-1 {
		t.Fatalf("round %d stored, want %d (the last write that succeeded)", got.Round, writes-1)
	}
	sp, err := s.Space(ctx)
	if err != nil || len(sp.Alarms) == 0 || !strings.Contains(sp.Alarms[0], "NOSPACE") {
		t.Fatalf("Space: %+v %v, want the NOSPACE alarm", sp, err)
	}
	if m := sp.Largest(); m.Quota != 8<<20 || m.Size == 0 {
		t.Fatalf("member %+v, want its size and the quota of 8 MiB", m)
	}
	// Every command opens the store first: that works while out of space.
	s2, err := etcdstore.Open(ctx, etcdstore.Options{Endpoints: c.Endpoints, Prefix: "full"})
	if err != nil {
		t.Fatalf("Open while out of space: %v", err)
	}
	defer s2.Close()
	if _, err := etcdstore.Open(ctx, etcdstore.Options{Endpoints: c.Endpoints, Prefix: "new"}); !errors.Is(err, etcdstore.ErrNoSpace) {
		t.Fatalf("Open of a new prefix while out of space: %v, want ErrNoSpace", err)
	}
	res, err := s2.Compact(ctx, etcdstore.CompactOptions{Keep: 10, Defrag: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.CompactedTo == 0 || !res.Defragged || !res.Disarmed || len(res.After.Alarms) != 0 {
		t.Fatalf("Compact: %+v", res)
	}
	if before, after := res.Before.Largest().Size, res.After.Largest().Size; after >= before/2 {
		t.Fatalf("database %d bytes before, %d after compaction and defragmentation", before, after)
	}
	if err := s.Update(ctx, func(tx engine.Tx) error {
		return tx.Append(engine.Event{FlowID: "f", Type: engine.EventStepDone, StepID: fmt.Sprint("after")})
	}); err != nil {
		t.Fatalf("write after Compact: %v", err)
	}
}
