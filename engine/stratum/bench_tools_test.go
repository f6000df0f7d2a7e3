package stratum

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// BenchmarkToolRoundOverhead measures what one tool round adds over the
// model's time: a Call whose model (a fake OpenAI-compatible server on the
// loopback) asks for one tool call, the tool returning at once, against
// the same Call without tools, interleaved; the extra request is the
// model's time of the round and is subtracted (its median, raw-µs/req
// measured in the same loop). Reported: the median overhead of the round
// (round-µs; goal ≤ 100 µs) and the allocations per tool Call and plain
// Call together.
func BenchmarkToolRoundOverhead(b *testing.B) {
	toolSrv := newCapture(&testing.T{}, "application/json", func(n int, body map[string]any) string {
		if len(toolMessages(body)) == 0 {
			return openAIToolCalls([3]string{"c1", "weather", `{"city":"Oslo"}`})
		}
		return openAIText(`{"summary":"cold"}`)
	})
	b.Cleanup(toolSrv.srv.Close)
	plainSrv := newCapture(&testing.T{}, "application/json", func(int, map[string]any) string { return openAIText(`{"summary":"cold"}`) })
	b.Cleanup(plainSrv.srv.Close)
	runtimeOver := func(url string) context.Context {
		env := map[string]string{"OPENAI_BASE_URL": url, "OPENAI_API_KEY": "k", "STRATUM_MODEL": "openai/gpt-4o-mini"}
		rt, err := New(Options{Getenv: func(k string) string { return env[k] }})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { rt.Close(context.Background()) })
		return WithRuntime(context.Background(), rt)
	}
	tctx, pctx := runtimeOver(toolSrv.srv.URL), runtimeOver(plainSrv.srv.URL)
	tool := NewTool("weather", "The weather", func(ctx context.Context, in cityIn) (weather, error) { return weather{City: in.City}, nil })
	withTool := MustInfer("forecast", Spec[cityIn, forecast]{Intent: "Weather", Tools: []Tool{tool}})
	plain := MustInfer("forecast", Spec[cityIn, forecast]{Intent: "Weather"})
	in := cityIn{City: "Oslo"}
	for _, c := range []struct {
		ctx context.Context
		f   *Fn[cityIn, forecast]
	}{{tctx, withTool}, {pctx, plain}} {
		if _, err := c.f.Call(c.ctx, in); err != nil {
			b.Fatal(err)
		}
	}
	body := []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Weather"}]}`)
	raw := func() {
		resp, err := http.Post(plainSrv.srv.URL+"/chat/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	raw()
	raws := make([]time.Duration, 0, b.N)
	rounds := make([]time.Duration, 0, b.N)
	plains := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		if _, err := plain.Call(pctx, in); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		if _, err := withTool.Call(tctx, in); err != nil {
			b.Fatal(err)
		}
		end := time.Now()
		raw()
		after := time.Now()
		plains = append(plains, mid.Sub(start))
		raws = append(raws, after.Sub(end))
		// The tool Call is the plain Call plus the round: the extra
		// request (the model's time, a raw request's) and what the
		// library adds around it.
		rounds = append(rounds, end.Sub(mid)-mid.Sub(start)-after.Sub(end))
		if i%500 == 499 {
			for _, s := range []*capture{toolSrv, plainSrv} {
				s.mu.Lock()
				s.paths, s.headers, s.bodies = nil, nil, nil
				s.mu.Unlock()
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(median(plains).Nanoseconds())/1e3, "plain-call-µs")
	b.ReportMetric(float64(median(raws).Nanoseconds())/1e3, "raw-µs/req")
	b.ReportMetric(float64(median(rounds).Nanoseconds())/1e3, "round-µs")
}

// BenchmarkStreamDeltaLatency measures how long a streamed delta takes
// from the fake server's flush to the caller's loop: 20 deltas of one
// answer, 1 ms apart, over SSE on the loopback (delta-µs: the median;
// goal ≤ 1 ms).
func BenchmarkStreamDeltaLatency(b *testing.B) {
	const n = 20
	var mu sync.Mutex
	var sent []time.Time
	answer := `{"label":"positive","confidence":0.9}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		events := openAIEvents(answer, n)
		for i, e := range events {
			if i < n {
				time.Sleep(time.Millisecond)
				mu.Lock()
				sent = append(sent, time.Now())
				mu.Unlock()
			}
			fmt.Fprintf(w, "data: %s\n\n", e)
			fl.Flush()
		}
	}))
	b.Cleanup(srv.Close)
	env := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "k", "STRATUM_MODEL": "openai/gpt-4o-mini"}
	rt, err := New(Options{Getenv: func(k string) string { return env[k] }})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close(context.Background()) })
	ctx := WithRuntime(context.Background(), rt)
	f := MustInfer("classify", Spec[textIn, sentiment]{Intent: "Classify the sentiment"})
	var lat []time.Duration
	b.ResetTimer()
	for range b.N {
		mu.Lock()
		sent = sent[:0]
		mu.Unlock()
		var got []time.Time
		for p, err := range f.Stream(ctx, textIn{Text: "x"}) {
			if err != nil {
				b.Fatal(err)
			}
			if p.Delta != "" {
				got = append(got, time.Now())
			}
		}
		mu.Lock()
		for i := range min(len(got), len(sent)) {
			lat = append(lat, got[i].Sub(sent[i]))
		}
		mu.Unlock()
	}
	b.StopTimer()
	b.ReportMetric(float64(median(lat).Nanoseconds())/1e3, "delta-µs")
}
