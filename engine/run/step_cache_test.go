package run

import (
	"context"
	"testing"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/specs/exprlang"
)

// countingStore counts the write transactions that commit.
type countingStore struct {
	engine.Store
	updates int
}

func (c *countingStore) Update(ctx context.Context, fn func(tx engine.Tx) error) error {
	err := c.Store.Update(ctx, fn)
	if err == nil {
		c.updates++
	}
	return err
}

// cachedSpec is a flow of a cached compute step (whose command prints
// first, then passes the ensure from then on) and a plain one.
func cachedSpec(first string) string {
	return `version: "0.2"
contracts:
  Out:
    n: {type: integer}
functions:
  compute:
    mode: compute
    intent: "compute"
    input: {x: {type: integer}}
    output: Out
    cache: true
    retries: 2
    run: "` + count("compute.count") + `if [ $(wc -l < compute.count) -eq 1 ]; then echo '` + first + `'; else echo '{\"n\": 5}'; fi"
    ensure: ["result.n == 5"]
flows:
  main:
    input: {}
    steps:
      - {id: a, function: compute, inputs: {x: "1"}}
      - {id: b, intent: "after", run: [printf, '{}']}
`
}

// TestGlobalCacheWrittenInTheStepsCommit: a cached step's result goes into
// the global cache in the commit that records the step done, so a run
// with the global cache commits as often as one without it, and the next
// run hits the entry; a result that fails its ensure is not cached.
func TestGlobalCacheWrittenInTheStepsCommit(t *testing.T) {
	for _, tc := range []struct {
		name, first string
		hit         bool
	}{
		{"accepted", `{\"n\": 5}`, true},
		{"ensure fails", `{\"n\": 4}`, false}, // and its retry is not cached either
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			cs := &countingStore{Store: e.store}
			e.svc = &engine.Service{ParseSpec: exprlang.ParseSpec, Store: cs}
			sp := e.spec(cachedSpec(tc.first))
			start := func(cache string) (*Outcome, int) {
				t.Helper()
				before := cs.updates
				o := e.start(sp, "main", nil, func(o *Options) { o.Cache = cache })
				wantStatus(t, o, EndComplete, 0)
				return o, cs.updates - before
			}
			_, withCache := start(CacheGlobal)
			_, without := start(CacheNone)
			if tc.hit && withCache != without {
				t.Fatalf("a run with the global cache committed %d times, one without it %d", withCache, without)
			}
			runs := e.count("compute.count")
			o, _ := start(CacheGlobal)
			if ran := e.count("compute.count") > runs; o.Steps[0].CacheHit != tc.hit || ran == tc.hit {
				t.Fatalf("cache hit %v, command ran %v; want a hit: %v", o.Steps[0].CacheHit, ran, tc.hit)
			}
		})
	}
}
