package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/enginetest"
	"github.com/stratum-go/stratum/specs/exprlang"
)

// leanSession is a server on newStdioTransport over pipes, with or without
// the lean path, on a store and clock of its own (the same ids and times
// every run), driven with raw frames.
type leanSession struct {
	in    *io.PipeWriter
	out   *bufio.Reader
	calls atomic.Int64 // lean calls taken
}

// startLeanSession starts the server with the lean path or without; extra
// tools are registered with the SDK and the lean path alike.
func startLeanSession(t *testing.T, lean bool, extra map[string]toolRun) *leanSession {
	t.Helper()
	n := 0
	var mu sync.Mutex
	svc := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: enginetest.New(),
		Now: func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) },
		NewID: func() string {
			mu.Lock()
			defer mu.Unlock()
			n++
			return fmt.Sprintf("00000000-0000-4000-8000-%012d", n)
		}}
	srv, s := newServer(svc, Options{SweepInterval: -1})
	for name, run := range extra {
		s.tools[name] = run
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				b, isErr, err := run(ctx, req)
				if err != nil {
					return nil, err
				}
				return &mcp.CallToolResult{IsError: isErr, StructuredContent: json.RawMessage(b),
					Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
			})
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	tr := newStdioTransport(inR, outW, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ls := &leanSession{in: inW, out: bufio.NewReaderSize(outR, 1<<16)}
	if lean {
		tr.lean = &leanCalls{srv: srv, tools: map[string]toolRun{}}
		for name, run := range s.tools {
			tr.lean.tools[name] = func(ctx context.Context, req *mcp.CallToolRequest) ([]byte, bool, error) {
				ls.calls.Add(1)
				return run(ctx, req)
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Run(ctx, tr)
	}()
	t.Cleanup(func() { _ = inW.Close(); cancel(); _ = outR.Close(); <-done })
	return ls
}

// exchange sends frame and returns the answer's line.
func (ls *leanSession) exchange(t *testing.T, frame string) string {
	t.Helper()
	if _, err := io.WriteString(ls.in, frame+"\n"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(frame, `"id"`) {
		return ""
	}
	line, err := ls.out.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return line
}

// The lean path answers with the very bytes the session writes, and takes
// only what it should.
func TestLeanSameBytes(t *testing.T) {
	spec := strings.ReplaceAll(`version: "0.2"
functions:
	review:
		mode: gate
flows:
	main:
		input: {}
		steps:
			- {id: s1, intent: "one <b> & \u2028 é \"q\" \\ ", ensure: ["result.ok == True"]}
			- {id: gate, function: review, depends_on: [s1], on_approve: ~, on_revise: s1, on_kill: ~}
`, "\t", "  ")
	specJSON := fmt.Sprintf("%q", spec)
	id := `"00000000-0000-4000-8000-000000000001"`
	frames := []struct {
		frame string
		lean  bool // taken by the lean path
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"stratum_list_flows","arguments":{}}}`, false}, // before initialize
		{`{"jsonrpc":"2.0","id":2,"method":"ping"}`, false},
		{`{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"lean","version":"1"}}}`, false},
		{`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`, false},
		{`{"jsonrpc":"2.0","id":4,"method":"ping"}`, false},
		{`{"jsonrpc":"2.0","id":"p","method":"ping","params":{}}`, false},
		{`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"stratum_plan","arguments":{"spec":` + specJSON + `,"flow":"main"}}}`, true},
		{`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"stratum_step_done","arguments":{"flow_id":` + id + `,"step_id":"s1","result":{"ok":false}}}}`, true},
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"stratum_step_done","arguments":{"flow_id":` + id + `,"step_id":"s1","result":{"ok":true}}}}`, true},
		{`{"jsonrpc":"2.0","id":8.50,"method":"tools/call","params":{"name":"stratum_gate_resolve","arguments":{"flow_id":` + id + `,"step_id":"gate","outcome":"approve","rationale":"<ok>","resolved_by":"agent"}}}`, true},
		{`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"arguments":{"flow_id":` + id + `},"name":"stratum_audit"}}`, true},
		{`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"stratum_audit","arguments":{"flow_id":7}}}`, true},
		{`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"stratum_audit"}}`, true},
		{`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"nope","arguments":{}}}`, false},
		{`{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"stratum_audit","arguments":{"flow_id":` + id + `},"_meta":{"progressToken":1}}}`, false},
		{`{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"stratum_audit","arguments":null}}`, false},
		{`{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"stratum_wait_gate","arguments":{"flow_id":` + id + `,"timeout_seconds":1}}}`, false},
		{`{"jsonrpc":"2.0","id":16,"method":"ping","params":{"_meta":{}}}`, false},
		{`{"jsonrpc":"2.0","id":17,"method":"tools/list"}`, false},
	}
	sdk, lean := startLeanSession(t, false, nil), startLeanSession(t, true, nil)
	for _, f := range frames {
		before := lean.calls.Load()
		want, got := sdk.exchange(t, f.frame), lean.exchange(t, f.frame)
		if got != want {
			t.Fatalf("%.120s:\nlean %.2000s\nsdk  %.2000s", f.frame, got, want)
		}
		if took := lean.calls.Load() > before; took != f.lean && strings.Contains(f.frame, "tools/call") {
			t.Errorf("%.120s: taken by the lean path %v, want %v", f.frame, took, f.lean)
		}
	}
	if lean.calls.Load() == 0 {
		t.Fatal("the lean path took no call")
	}
}

// A notifications/cancelled naming a lean call in flight cancels its
// context, and the call is answered as the session answers a cancelled one.
func TestLeanCancelled(t *testing.T) {
	answer := func(lean bool) string {
		started := make(chan struct{}, 1)
		slow := func(ctx context.Context, _ *mcp.CallToolRequest) ([]byte, bool, error) {
			started <- struct{}{}
			select {
			case <-ctx.Done():
				return nil, false, ctx.Err()
			case <-time.After(10 * time.Second):
				return []byte(`{"late":true}`), false, nil
			}
		}
		ls := startLeanSession(t, lean, map[string]toolRun{"slow": slow})
		ls.exchange(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"lean","version":"1"}}}`)
		ls.exchange(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		if _, err := io.WriteString(ls.in, `{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"slow","arguments":{}}}`+"\n"); err != nil {
			t.Fatal(err)
		}
		<-started
		ls.exchange(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c"}}`)
		line, err := ls.out.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if lean && ls.calls.Load() != 1 {
			t.Fatalf("the lean path took %d calls, want 1", ls.calls.Load())
		}
		return line
	}
	want, got := answer(false), answer(true)
	if got != want || !strings.Contains(got, `"id":"c","error"`) {
		t.Fatalf("lean %s\nsdk  %s", got, want)
	}
}
