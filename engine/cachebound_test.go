package engine_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/enginetest"
)

// TestResultCacheDefaultBound: every driver's bound is the original's
// (30 days, 2,000 entries), and writing the 2,001st entry removes the
// first written. (The contract suite, store/storetest, checks the bound
// with small limits on every store.)
func TestResultCacheDefaultBound(t *testing.T) {
	if want := (engine.CacheBound{MaxAge: 30 * 24 * time.Hour, MaxEntries: 2000}); engine.ResultCache != want {
		t.Fatalf("ResultCache = %+v, want %+v", engine.ResultCache, want)
	}
	st := enginetest.New()
	ctx := context.Background()
	t0 := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	for i := 0; i <= engine.DefaultCacheMaxEntries; i++ {
		if err := st.Update(ctx, func(tx engine.Tx) error {
			return engine.ResultCache.Write(tx, fmt.Sprintf("k%d", i), []byte("1"), t0.Add(time.Duration(i)*time.Second))
		}); err != nil {
			t.Fatal(err)
		}
	}
	now := t0.Add(time.Hour)
	for key, want := range map[string]bool{"k0": false, "k1": true, "k2000": true} {
		var ok bool
		if err := st.View(ctx, func(tx engine.Tx) (err error) { _, ok, err = engine.ResultCache.Read(tx, key, now); return err }); err != nil {
			t.Fatal(err)
		}
		if ok != want {
			t.Errorf("%s present: %v, want %v", key, ok, want)
		}
	}
}

// TestParseCacheBound: the original's STRATUM_CACHE_MAX_AGE_DAYS and
// STRATUM_CACHE_MAX_ENTRIES set the bound; anything but a positive whole
// number keeps the default.
func TestParseCacheBound(t *testing.T) {
	day := 24 * time.Hour
	for _, c := range []struct {
		age, entries string
		want         engine.CacheBound
	}{
		{"", "", engine.CacheBound{MaxAge: 30 * day, MaxEntries: 2000}},
		{"7", "50", engine.CacheBound{MaxAge: 7 * day, MaxEntries: 50}},
		{" 1 ", "1", engine.CacheBound{MaxAge: day, MaxEntries: 1}},
		{"0", "-3", engine.CacheBound{MaxAge: 30 * day, MaxEntries: 2000}},
		{"ten", "2.5", engine.CacheBound{MaxAge: 30 * day, MaxEntries: 2000}},
		{"99999999999999", "", engine.CacheBound{MaxAge: 30 * day, MaxEntries: 2000}},
	} {
		if got := engine.ParseCacheBound(c.age, c.entries); got != c.want {
			t.Errorf("ParseCacheBound(%q, %q) = %+v, want %+v", c.age, c.entries, got, c.want)
		}
	}
}

func TestResultCacheDisabled(t *testing.T) {
	for v, want := range map[string]bool{"": false, "0": false, "false": false, " No ": false, "FALSE": false,
		"1": true, "true": true, "yes": true, "anything": true} {
		if got := engine.ResultCacheDisabled(v); got != want {
			t.Errorf("ResultCacheDisabled(%q) = %v, want %v", v, got, want)
		}
	}
}
