package storetest

import (
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
)

// testCacheBound checks the result cache's bound (engine.CacheBound) over
// this store: entries older than MaxAge read as misses and are removed by
// the next write, writing past MaxEntries removes the oldest written (a
// rewrite makes an entry the newest), an entry written without a stamp
// still reads, and the index is no entry.
func testCacheBound(t *testing.T, s engine.Store) {
	b := engine.CacheBound{MaxAge: time.Hour, MaxEntries: 3}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	write := func(key, val string, now time.Time) {
		t.Helper()
		if err := s.Update(ctx, func(tx engine.Tx) error { return b.Write(tx, key, []byte(val), now) }); err != nil {
			t.Fatalf("Write(%q): %v", key, err)
		}
	}
	read := func(key string, now time.Time) (string, bool) {
		t.Helper()
		var v []byte
		var ok bool
		if err := s.View(ctx, func(tx engine.Tx) (err error) { v, ok, err = b.Read(tx, key, now); return err }); err != nil {
			t.Fatalf("Read(%q): %v", key, err)
		}
		return string(v), ok
	}
	stored := func(key string) bool {
		t.Helper()
		var ok bool
		if err := s.View(ctx, func(tx engine.Tx) (err error) { _, ok, err = tx.CacheGet(key); return err }); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	want := func(now time.Time, hits map[string]string, misses ...string) {
		t.Helper()
		for k, w := range hits {
			if v, ok := read(k, now); !ok || v != w {
				t.Errorf("Read(%q) at %v = %q, %v; want %q", k, now.Sub(t0), v, ok, w)
			}
		}
		for _, k := range misses {
			if v, ok := read(k, now); ok {
				t.Errorf("Read(%q) at %v = %q; want a miss", k, now.Sub(t0), v)
			}
		}
	}
	if err := s.Update(ctx, func(tx engine.Tx) error { return tx.CachePut("b-legacy", []byte(`{"old":1}`)) }); err != nil {
		t.Fatal(err)
	}
	write("b-a", `"a"`, at(0))
	write("b-b", `"b"`, at(time.Minute))
	write("b-c", "", at(2*time.Minute))
	want(at(3*time.Minute), map[string]string{"b-a": `"a"`, "b-b": `"b"`, "b-c": "", "b-legacy": `{"old":1}`})
	write("b-d", `"d"`, at(3*time.Minute)) // the fourth: b-a, the oldest, goes
	if stored("b-a") {
		t.Error("b-a still stored after a fourth entry was written (MaxEntries 3)")
	}
	write("b-b", `"b2"`, at(4*time.Minute)) // rewritten: now the newest
	write("b-e", `"e"`, at(5*time.Minute))  // b-c, now the oldest, goes
	want(at(6*time.Minute), map[string]string{"b-b": `"b2"`, "b-d": `"d"`, "b-e": `"e"`}, "b-a", "b-c")
	// Older than MaxAge: a miss at once, still stored until the next write.
	want(at(3*time.Minute+time.Hour+time.Second), map[string]string{"b-b": `"b2"`}, "b-d")
	if !stored("b-d") {
		t.Error("b-d removed by a read")
	}
	write("b-f", `"f"`, at(4*time.Minute+time.Hour+time.Second)) // b-d and b-b expired
	for _, k := range []string{"b-d", "b-b"} {
		if stored(k) {
			t.Errorf("%s still stored after a write past its age", k)
		}
	}
	want(at(4*time.Minute+time.Hour+time.Second), map[string]string{"b-e": `"e"`, "b-f": `"f"`, "b-legacy": `{"old":1}`})
	// An entry written without a stamp reads, at any time, and is not counted.
	want(at(1000*time.Hour), map[string]string{"b-legacy": `{"old":1}`}, "b-e", "b-f")
	if _, ok := read(engine.CacheIndexKey, at(0)); ok {
		t.Error("the cache index reads as an entry")
	}
	if err := s.Update(ctx, func(tx engine.Tx) error { return b.Write(tx, engine.CacheIndexKey, nil, at(0)) }); err == nil {
		t.Error("Write of the index key: no error")
	}
}
