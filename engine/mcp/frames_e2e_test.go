package mcp_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// rawServer is `stratum mcp` driven with raw newline-delimited frames, so a
// test can send what no well-behaved client would.
type rawServer struct {
	t     testing.TB
	in    io.WriteCloser
	out   *bufio.Reader
	lines chan string
}

func startRaw(t testing.TB) *rawServer {
	t.Helper()
	cmd := exec.Command(bin, "mcp")
	cmd.Env = environ(t.TempDir(), storeFor(t))
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
	s := &rawServer{t: t, in: in, lines: make(chan string, 16)}
	go func() {
		r := bufio.NewReaderSize(out, 1<<16)
		for {
			line, err := r.ReadString('\n')
			if line != "" {
				s.lines <- line
			}
			if err != nil {
				close(s.lines)
				return
			}
		}
	}()
	t.Cleanup(func() {
		_ = in.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("stderr:\n%s", stderr.String())
		}
	})
	return s
}

func (s *rawServer) send(frame string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, frame+"\n"); err != nil {
		s.t.Fatalf("writing a frame: %v", err)
	}
}

// reply waits for the response to request id (alone or in a batch).
func (s *rawServer) reply(id int) map[string]any {
	s.t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				s.t.Fatalf("the server closed stdout before answering request %d", id)
			}
			var ms []map[string]any
			if strings.HasPrefix(line, "[") {
				if err := json.Unmarshal([]byte(line), &ms); err != nil {
					s.t.Fatalf("not JSON: %q", line)
				}
			} else {
				var m map[string]any
				if err := json.Unmarshal([]byte(line), &m); err != nil {
					s.t.Fatalf("not JSON: %q", line)
				}
				ms = append(ms, m)
			}
			for _, m := range ms {
				if got, _ := m["id"].(float64); int(got) == id && m["id"] != nil {
					return m
				}
			}
		case <-deadline:
			s.t.Fatalf("no answer to request %d", id)
		}
	}
}

func (s *rawServer) initialize() {
	s.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if r := s.reply(1); r["result"] == nil {
		s.t.Fatalf("initialize: %v", r)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// wantError checks that request id was answered with a JSON-RPC error whose
// message contains msg.
func (s *rawServer) wantError(id int, msg string) {
	s.t.Helper()
	r := s.reply(id)
	e, _ := r["error"].(map[string]any)
	if e == nil {
		s.t.Fatalf("request %d: want an error, got %v", id, r)
	}
	if m, _ := e["message"].(string); !strings.Contains(m, msg) {
		s.t.Fatalf("request %d: error %v, want it to mention %q", id, e, msg)
	}
}

func validateCall(id int, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"stratum_validate","arguments":%s}}`, id, args)
}

// TestHostileFrames: a request nested 10,000 levels deep, a frame over
// 16 MiB, a line that is not JSON and one that is not a JSON-RPC message are
// each answered with an error, and the server keeps serving (it exited on
// the first two before).
func TestHostileFrames(t *testing.T) { onBoth(t, testHostileFrames) }

func testHostileFrames(t *testing.T) {
	s := startRaw(t)
	s.initialize()

	deep := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	s.send(validateCall(2, `{"spec": "x", "junk": `+deep+`}`))
	s.wantError(2, "nested deeper than")

	big := strings.Repeat("a", 17<<20)
	s.send(validateCall(3, `{"spec": "`+big+`"}`))
	s.wantError(3, "larger than")

	s.send(`{"jsonrpc":"2.0","id":4,"method":"tools/list"`) // cut short
	s.wantError(4, "not valid JSON")
	s.send(`{"id":5,"jsonrpc":"1.0","nothing":true}`)
	s.wantError(5, "not a JSON-RPC message")
	s.send(`[{"jsonrpc":"2.0","id":6,"method":"tools/list"}]`)
	s.wantError(6, "batch")

	src, _ := json.Marshal(map[string]any{"spec": "version: \"0.2\"\nflows:\n  main:\n    input: {}\n    steps:\n      - {id: a, intent: hi}\n"})
	s.send(validateCall(7, string(src)))
	r := s.reply(7)
	res, _ := r["result"].(map[string]any)
	if res == nil || res["isError"] == true {
		t.Fatalf("a normal call after the hostile frames: %v", r)
	}
	if sc, _ := res["structuredContent"].(map[string]any); sc["valid"] != true {
		t.Fatalf("stratum_validate: %v", res)
	}
}

// TestCLIJSONLimits: the CLI applies the MCP frame limits to a step result
// and to flow inputs (it accepted a 50 MB, 10,000-deep result before).
func TestCLIJSONLimits(t *testing.T) { onBoth(t, testCLIJSONLimits) }

func testCLIJSONLimits(t *testing.T) {
	s := &server{t: t, home: t.TempDir(), store: storeFor(t)}
	dir := t.TempDir()
	deep := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	write := func(name, content string) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bigFile := write("big.json", `{"a": "`+strings.Repeat("a", 17<<20)+`"}`)
	deepFile := write("deep.json", `{"a": `+deep+`}`)
	spec := write("s.stratum.yaml", "version: \"0.2\"\nflows:\n  main:\n    input: {}\n    steps:\n      - {id: a, intent: hi}\n")
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"result-deep", []string{"step-done", "f", "a", "--result", deep}, "nested deeper than 256 levels"},
		{"result-file-deep", []string{"step-done", "f", "a", "--result-file", deepFile}, "nested deeper than 256 levels"},
		{"result-file-big", []string{"step-done", "f", "a", "--result-file", bigFile}, "larger than 16 MiB"},
		{"plan-inputs-deep", []string{"plan", spec, "--inputs", deepFile}, "nested deeper than 256 levels"},
		{"plan-inputs-big", []string{"plan", spec, "--inputs", bigFile}, "larger than 16 MiB"},
		{"plan-input-deep", []string{"plan", spec, "--input", "x=" + deep}, "nested deeper than 256 levels"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := s.cli(c.args...)
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Fatalf("exit %v, want 2 (usage); output:\n%.500s", err, out)
			}
			if !strings.Contains(out, c.want) {
				t.Fatalf("output lacks %q:\n%.500s", c.want, out)
			}
		})
	}
}
