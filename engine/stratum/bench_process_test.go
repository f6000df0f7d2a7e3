package stratum_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine/stratum"
)

// fakeProcessEnv makes TestFakeServerProcess serve: the benchmarks below
// start the test binary again with it set, so that the fake provider runs
// in another process and none of its work is counted in theirs.
const fakeProcessEnv = "STRATUM_BENCH_FAKE_SERVER"

// fakeProcessAnswer is the fake's one answer (an OpenAI-compatible chat
// completion whose content fits benchSentiment and its Ensure).
const fakeProcessAnswer = `{"id":"c1","model":"gpt-4o-mini","choices":[{"finish_reason":"stop","message":{"content":"{\"label\":\"positive\",\"confidence\":0.9}"}}],"usage":{"prompt_tokens":100,"completion_tokens":10}}`

// TestFakeServerProcess is not a test: started by startFakeProcess with
// fakeProcessEnv set, it serves an OpenAI-compatible fake on the loopback,
// prints its URL, keeps the last request body (GET /last), and stops when
// its standard input closes (or after ten minutes). Without the variable
// it is skipped.
func TestFakeServerProcess(t *testing.T) {
	if os.Getenv(fakeProcessEnv) == "" {
		t.Skip("the fake provider of the process benchmarks; runs only in their child process")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var last []byte
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/last" {
			mu.Lock()
			w.Write(last)
			mu.Unlock()
			return
		}
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		last = b
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, fakeProcessAnswer)
	})}
	go srv.Serve(ln)
	os.Stdout.WriteString("http://" + ln.Addr().String() + "\n")
	done := make(chan struct{})
	go func() { io.Copy(io.Discard, os.Stdin); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Minute):
	}
	srv.Close()
}

// startFakeProcess starts the fake provider in a child process and returns
// its URL; the child stops when the benchmark ends.
func startFakeProcess(b *testing.B) string {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFakeServerProcess$")
	cmd.Env = append(os.Environ(), fakeProcessEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "http://") {
		b.Fatalf("the fake provider did not start: %q %v", line, err)
	}
	go io.Copy(io.Discard, stdout)
	return strings.TrimSpace(line)
}

type benchText struct {
	Text string `json:"text"`
}

type benchSentiment struct {
	Label      string  `json:"label" stratum:"enum=positive|negative|neutral"`
	Confidence float64 `json:"confidence" stratum:"min=0,max=1"`
}

// BenchmarkCallProcess measures a Call on the client's side alone: the
// fake provider runs in another process (the test binary started again),
// so the reported allocations are the library's and its HTTP client's.
// Each iteration times a raw net/http request carrying the Call's own body
// to the same server, then the Call (its answer checked against the
// output schema and one Ensure); reported are the median of the
// differences (overhead-µs/call), the median raw request (raw-µs/req),
// and, counted apart after the timed loop, the allocations of one Call
// (allocs/call) and of one raw request (raw-allocs/req). ns/op and
// allocs/op are of both together.
func BenchmarkCallProcess(b *testing.B) {
	url := startFakeProcess(b)
	env := map[string]string{"OPENAI_BASE_URL": url, "OPENAI_API_KEY": "test-key", "STRATUM_MODEL": "openai/gpt-4o-mini"}
	rt, err := stratum.New(stratum.Options{Getenv: func(k string) string { return env[k] }, Stderr: io.Discard})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close(context.Background()) })
	ctx := stratum.WithRuntime(context.Background(), rt)
	f := stratum.MustInfer("classify", stratum.Spec[benchText, benchSentiment]{Intent: "Classify the sentiment",
		Ensure: []stratum.Check[benchSentiment]{stratum.Ensure("confident", func(s benchSentiment) bool { return s.Confidence > 0.5 })}})
	in := benchText{Text: "I love it"}
	call := func() {
		if _, err := f.Call(ctx, in); err != nil {
			b.Fatal(err)
		}
	}
	call()
	body := lastBody(b, url)
	raw := func() {
		req, _ := http.NewRequest("POST", url+"/chat/completions", bytes.NewReader(body))
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
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		raw()
		mid := time.Now()
		call()
		end := time.Now()
		raws = append(raws, mid.Sub(start))
		diffs = append(diffs, end.Sub(mid)-mid.Sub(start))
	}
	b.StopTimer()
	n := min(b.N, 200)
	b.ReportMetric(mallocsPer(n, call), "allocs/call")
	b.ReportMetric(mallocsPer(n, raw), "raw-allocs/req")
	b.ReportMetric(float64(medianOf(raws).Nanoseconds())/1e3, "raw-µs/req")
	b.ReportMetric(float64(medianOf(diffs).Nanoseconds())/1e3, "overhead-µs/call")
}

// lastBody is the last request body the fake provider received.
func lastBody(b *testing.B, url string) []byte {
	resp, err := http.Get(url + "/last")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || len(body) == 0 {
		b.Fatalf("no request body from the fake provider: %v", err)
	}
	return body
}

// mallocsPer runs fn n times and returns the heap allocations per run (of
// this process: every goroutine's, the HTTP client's included).
func mallocsPer(n int, fn func()) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range n {
		fn()
	}
	runtime.ReadMemStats(&after)
	return float64(after.Mallocs-before.Mallocs) / float64(n)
}

func medianOf(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
