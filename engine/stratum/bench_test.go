package stratum

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"
)

// BenchmarkCallOverhead measures the library's time per Call with the
// provider's excluded: each iteration times a raw HTTP request carrying
// the same body to the same loopback server, then a Call, and the
// benchmark reports the median of the differences (overhead-µs/call; goal
// ≤ 50 µs without a store) and the median raw request (raw-µs/req). A
// median, because on a shared machine a few iterations wait for a CPU;
// ns/op is the mean of both together.
func BenchmarkCallOverhead(b *testing.B) {
	fake := newFake(b, `{"label":"positive","confidence":0.9}`)
	_, ctx := fake.runtime(b, Options{})
	f := MustInfer("classify", Spec[textIn, sentiment]{Intent: "Classify the sentiment",
		Ensure: []Check[sentiment]{Ensure("confident", func(s sentiment) bool { return s.Confidence > 0.5 })}})
	in := textIn{Text: "I love it"}
	if _, err := f.Call(ctx, in); err != nil {
		b.Fatal(err)
	}
	fake.mu.Lock()
	body, _ := json.Marshal(fake.bodies[0])
	fake.mu.Unlock()
	raw := func() {
		req, _ := http.NewRequest("POST", fake.srv.URL+"/chat/completions", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer test-key")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	raw()
	diffs := make([]time.Duration, 0, b.N)
	raws := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		raw()
		mid := time.Now()
		if _, err := f.Call(ctx, in); err != nil {
			b.Fatal(err)
		}
		end := time.Now()
		raws = append(raws, mid.Sub(start))
		diffs = append(diffs, end.Sub(mid)-mid.Sub(start))
		if i%1000 == 999 {
			fake.mu.Lock()
			fake.prompts, fake.bodies = nil, nil // the fake keeps every request
			fake.mu.Unlock()
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(median(raws).Nanoseconds())/1e3, "raw-µs/req")
	b.ReportMetric(float64(median(diffs).Nanoseconds())/1e3, "overhead-µs/call")
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkAll100 measures what All adds over its slowest branch: 100
// branches each sleeping 20 ms and noting when they end; reported is the
// median time from the last branch's end to All's return (added-µs; goal
// ≤ 1 ms) and the median time from All's start to the last branch's start
// (start-µs: launching 100 goroutines).
func BenchmarkAll100(b *testing.B) {
	const d = 20 * time.Millisecond
	ends := make([]time.Time, 100)
	starts := make([]time.Time, 100)
	branches := make([]Branch[int], 100)
	for i := range branches {
		branches[i] = func(ctx context.Context) (int, error) {
			starts[i] = time.Now()
			defer func() { ends[i] = time.Now() }()
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
				return i, nil
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		}
	}
	added := make([]time.Duration, 0, b.N)
	launch := make([]time.Duration, 0, b.N)
	for range b.N {
		start := time.Now()
		if _, err := All(context.Background(), branches...); err != nil {
			b.Fatal(err)
		}
		done := time.Now()
		last, lastStart := ends[0], starts[0]
		for i := range ends {
			if ends[i].After(last) {
				last = ends[i]
			}
			if starts[i].After(lastStart) {
				lastStart = starts[i]
			}
		}
		added = append(added, done.Sub(last))
		launch = append(launch, lastStart.Sub(start))
	}
	b.ReportMetric(float64(median(added).Nanoseconds())/1e3, "added-µs")
	b.ReportMetric(float64(median(launch).Nanoseconds())/1e3, "start-µs")
}

// BenchmarkAll100Calls runs 100 Calls in All against a server that takes
// 20 ms per answer, and reports the time above one such Call measured in
// the same run (added-µs): the library's, the HTTP stack's and the fake
// server's work for 100 concurrent requests on this machine.
func BenchmarkAll100Calls(b *testing.B) {
	fake := newFake(b, `{"label":"positive","confidence":0.9}`)
	fake.delay = 20 * time.Millisecond
	_, ctx := fake.runtime(b, Options{})
	f := MustInfer("classify", Spec[textIn, sentiment]{Intent: "Classify the sentiment"})
	branches := make([]Branch[sentiment], 100)
	for i := range branches {
		branches[i] = func(ctx context.Context) (sentiment, error) { return f.Call(ctx, textIn{Text: "x"}) }
	}
	All(ctx, branches...) // warm the connection pool
	b.ResetTimer()
	var one, all time.Duration
	for range b.N {
		start := time.Now()
		if _, err := f.Call(ctx, textIn{Text: "x"}); err != nil {
			b.Fatal(err)
		}
		one += time.Since(start)
		start = time.Now()
		if _, err := All(ctx, branches...); err != nil {
			b.Fatal(err)
		}
		all += time.Since(start)
		fake.mu.Lock()
		fake.prompts, fake.bodies = nil, nil
		fake.mu.Unlock()
	}
	b.ReportMetric(float64((all-one).Microseconds())/float64(b.N), "added-µs")
	b.ReportMetric(float64(one.Microseconds())/float64(b.N), "one-call-µs")
}
