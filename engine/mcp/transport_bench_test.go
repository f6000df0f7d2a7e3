package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/enginetest"
	"github.com/stratum-go/stratum/specs/exprlang"
	"github.com/stratum-go/stratum/store"
)

// rawSession is the server on newStdioTransport over pipes, with the lean
// path as Serve runs it, driven with raw frames: the server's share of a
// call without a client's decoding.
type rawSession struct {
	tb  testing.TB
	in  *io.PipeWriter
	out *bufio.Reader
	id  int
}

func startRawSession(tb testing.TB, store engine.Store) *rawSession {
	tb.Helper()
	srv, st := newServer(&engine.Service{ParseSpec: exprlang.ParseSpec, Store: store}, Options{})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	tr := newStdioTransport(inR, outW, slog.New(slog.NewTextHandler(io.Discard, nil)))
	tr.lean = &leanCalls{srv: srv, tools: st.tools} // as Serve has it
	go func() {
		defer close(done)
		_ = srv.Run(ctx, tr)
	}()
	tb.Cleanup(func() { _ = inW.Close(); cancel(); _ = outR.Close(); <-done })
	s := &rawSession{tb: tb, in: inW, out: bufio.NewReaderSize(outR, 1<<16)}
	s.call("initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}`)
	if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`+"\n"); err != nil {
		tb.Fatal(err)
	}
	return s
}

// call sends a request and returns its response's result.
func (s *rawSession) call(method, params string) json.RawMessage {
	s.id++
	if _, err := fmt.Fprintf(s.in, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", s.id, method, params); err != nil {
		s.tb.Fatal(err)
	}
	line, err := s.out.ReadBytes('\n')
	if err != nil {
		s.tb.Fatal(err)
	}
	var resp struct {
		ID     int             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(line, &resp); err != nil || resp.ID != s.id || resp.Error != nil {
		s.tb.Fatalf("%s: response %.300s (%v)", method, line, err)
	}
	return resp.Result
}

// tool calls a tool and returns its structured content.
func (s *rawSession) tool(name string, args map[string]any) map[string]any {
	a, _ := json.Marshal(map[string]any{"name": name, "arguments": args})
	var res struct {
		StructuredContent map[string]any `json:"structuredContent"`
	}
	if err := json.Unmarshal(s.call("tools/call", string(a)), &res); err != nil {
		s.tb.Fatal(err)
	}
	return res.StructuredContent
}

// BenchmarkServerCall: the server's time per call (ping, resume at a gate,
// audit of a flow at its gate) over the stdio transport, in process, on the
// in-memory store and on a bbolt file.
func BenchmarkServerCall(b *testing.B) {
	b.Run("mem", func(b *testing.B) { benchServerCall(b, enginetest.New()) })
	b.Run("bbolt", func(b *testing.B) {
		st, err := store.Open(filepath.Join(b.TempDir(), store.FileName), store.Options{})
		if err != nil {
			b.Fatal(err)
		}
		benchServerCall(b, st)
	})
}

func benchServerCall(b *testing.B, store engine.Store) {
	s := startRawSession(b, store)
	spec := strings.ReplaceAll(benchFlowSpec, "\t", "  ")
	plan := s.tool("stratum_plan", map[string]any{"spec": spec, "flow": "main", "inputs": map[string]any{}})
	id, _ := plan["flow_id"].(string)
	if id == "" {
		b.Fatalf("plan: %v", plan)
	}
	for k, step := range []string{"s1", "s2", "s3"} {
		s.tool("stratum_step_done", map[string]any{"flow_id": id, "step_id": step, "result": map[string]any{"ok": true, "n": k + 1}})
	}
	resume := fmt.Sprintf(`{"name":"stratum_resume","arguments":{"flow_id":%q}}`, id)
	if got := s.tool("stratum_resume", map[string]any{"flow_id": id}); got["status"] != "await_gate" {
		b.Fatalf("resume: %v", got)
	}
	audit := fmt.Sprintf(`{"name":"stratum_audit","arguments":{"flow_id":%q}}`, id)
	for _, c := range []struct{ name, method, params string }{
		{"ping", "ping", `{}`},
		{"resume", "tools/call", resume},
		{"audit", "tools/call", audit},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				s.call(c.method, c.params)
			}
		})
	}
}

const benchFlowSpec = `version: "0.2"
contracts:
	Out:
		ok: {type: boolean}
		n: {type: integer}
functions:
	review:
		mode: gate
flows:
	main:
		input: {}
		steps:
			- {id: s1, intent: "one", output_contract: Out, ensure: ["result.ok == True"]}
			- {id: s2, intent: "two", depends_on: [s1], output_contract: Out, ensure: ["result.ok == True"]}
			- {id: s3, intent: "three", depends_on: [s2], output_contract: Out, ensure: ["result.ok == True"]}
			- {id: gate, function: review, depends_on: [s3], on_approve: ~, on_revise: s1, on_kill: ~}
`
