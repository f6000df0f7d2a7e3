package mcp_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// procServer is `stratum mcp` as a process whose stdout the test reads
// itself (or not at all).
type procServer struct {
	t   *testing.T
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func startProc(t *testing.T) *procServer {
	t.Helper()
	cmd := exec.Command(bin, "mcp")
	cmd.Env = environ(t.TempDir(), "")
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = in.Close()
		go func() { _, _ = io.Copy(io.Discard, out) }()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("stderr:\n%s", stderr.String())
		}
	})
	return &procServer{t: t, cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<16)}
}

func (s *procServer) send(frame string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, frame+"\n"); err != nil {
		s.t.Fatalf("writing a frame: %v", err)
	}
}

// line reads the next line of stdout, failing after a minute.
func (s *procServer) line() string {
	s.t.Helper()
	got := make(chan string, 1)
	go func() {
		l, _ := s.out.ReadString('\n')
		got <- l
	}()
	select {
	case l := <-got:
		if l == "" {
			s.t.Fatal("stdout closed")
		}
		return strings.TrimRight(l, "\n")
	case <-time.After(60 * time.Second):
		s.t.Fatal("no line on stdout")
		return ""
	}
}

func (s *procServer) initialize() {
	s.t.Helper()
	s.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if l := s.line(); !strings.Contains(l, `"result"`) {
		s.t.Fatalf("initialize: %s", l)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// TestRequestIDs: ids are echoed byte for byte (1.5 was answered as 1,
// which a client with request 1 in flight took for that answer); a frame
// whose id is null, an array, an object or a boolean is answered with an
// invalid-request error and id null (null got no answer at all), and the
// server keeps serving.
func TestRequestIDs(t *testing.T) {
	s := startProc(t)
	s.initialize()
	tests := []struct {
		id, want string // want: the answer's prefix
	}{
		{`1.5`, `{"jsonrpc":"2.0","id":1.5,"result":`},
		{`1`, `{"jsonrpc":"2.0","id":1,"result":`},
		{`-0`, `{"jsonrpc":"2.0","id":-0,"result":`},
		{`1e3`, `{"jsonrpc":"2.0","id":1e3,"result":`},
		{`123456789012345678901234567890`, `{"jsonrpc":"2.0","id":123456789012345678901234567890,"result":`},
		{`9007199254740993`, `{"jsonrpc":"2.0","id":9007199254740993,"result":`},
		{`"a\u00e9<b>&\"c"`, `{"jsonrpc":"2.0","id":"a\u00e9<b>&\"c","result":`},
		{`""`, `{"jsonrpc":"2.0","id":"","result":`},
		{`null`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,`},
		{`[1]`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,`},
		{`{"a":1}`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,`},
		{`true`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,`},
		{`false`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,`},
	}
	for _, tt := range tests {
		s.send(`{"jsonrpc":"2.0","id":` + tt.id + `,"method":"ping"}`)
		if l := s.line(); !strings.HasPrefix(l, tt.want) {
			t.Errorf("id %s answered %s, want %s…", tt.id, l, tt.want)
		}
	}
	// Still serving, and a later 1 is not confused with the 1.5 before.
	s.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if l := s.line(); !strings.HasPrefix(l, `{"jsonrpc":"2.0","id":2,"result":{`) || !strings.Contains(l, `"tools":[`) {
		t.Fatalf("after the table: %.200s", l)
	}
}

// validateFrame is a stratum_validate call carrying pad bytes of comment.
func validateFrame(id, pad int) string {
	spec := `version: \"0.2\"\n# ` + strings.Repeat("x", pad) + `\nflows:\n  main:\n    input: {}\n    steps:\n      - {id: a, intent: hi}\n`
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"stratum_validate","arguments":{"spec":"%s"}}}`, id, spec)
}

// rss is the resident memory of pid in bytes (Linux).
func rss(t *testing.T, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n << 10
		}
	}
	t.Skip("no VmRSS")
	return 0
}

// TestSlowReaderBackPressure: a client that sends requests and stops
// reading the answers stops the server reading (its writes block) instead
// of having it read and execute everything (359 MB after 5,000 requests).
// Once it reads again, every request is answered.
func TestSlowReaderBackPressure(t *testing.T) {
	s := startProc(t)
	s.initialize()
	base := rss(t, s.cmd.Process.Pid)
	const n, pad = 4000, 32 << 10 // 128 MiB of requests
	var sent atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1; i <= n; i++ {
			if _, err := io.WriteString(s.in, validateFrame(i, pad)+"\n"); err != nil {
				return
			}
			sent.Add(1)
		}
	}()
	// Wait until the writer makes no progress for a second.
	for last := int64(-1); ; {
		time.Sleep(time.Second)
		if now := sent.Load(); now == last || now == n {
			break
		} else {
			last = now
		}
	}
	if got := sent.Load(); got >= n {
		t.Fatalf("the server read all %d requests while nobody read its answers", n)
	}
	grown := rss(t, s.cmd.Process.Pid) - base
	t.Logf("the writer stalled after %d requests; server RSS %d MiB, grown by %d MiB", sent.Load(), (base+grown)>>20, grown>>20)
	if grown > 64<<20 {
		t.Fatalf("server resident memory grew by %d MiB with %d requests sent and no answer read", grown>>20, sent.Load())
	}
	for i := 1; i <= n; i++ {
		if l := s.line(); !strings.HasPrefix(l, `{"jsonrpc":"2.0","id":`) || !strings.Contains(l, `"valid":true`) {
			t.Fatalf("answer %d: %.200s", i, l)
		}
	}
	<-done
}

// TestEOFAnswersRequestsInFlight: requests already read when stdin ends are
// finished and answered before the server exits (it dropped them all).
func TestEOFAnswersRequestsInFlight(t *testing.T) {
	s := startProc(t)
	s.initialize()
	const n = 40
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString(validateFrame(i, 256<<10) + "\n")
	}
	go func() {
		_, _ = io.WriteString(s.in, b.String())
		_ = s.in.Close()
	}()
	seen := map[string]bool{}
	for range n {
		l := s.line()
		i := strings.Index(l, `"id":`)
		j := strings.Index(l, `,"result"`)
		if i < 0 || j < i || !strings.Contains(l, `"valid":true`) {
			t.Fatalf("answer: %.200s", l)
		}
		seen[l[i+5:j]] = true
	}
	if len(seen) != n {
		t.Fatalf("%d distinct answers, want %d", len(seen), n)
	}
	if err := s.cmd.Wait(); err != nil {
		t.Fatalf("exit: %v", err)
	}
}
