package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stratum-go/stratum/engine/state"
)

// The lean path. Most frames an agent sends are a tools/call or a ping of
// the plainest form, and the SDK session's handling of each (a goroutine
// of its jsonrpc2 connection, the params decoded again by its decoder,
// middleware, the result marshalled through CallToolResult, TextContent and
// the response, each pass compacting the JSON again) cost more than our
// tool body did outside the store. So the connection (transport.go) answers
// those itself, with the very bytes the session writes:
//
//   - ping whose params are absent or {}, once the session is initialised
//     (as below): {"jsonrpc":"2.0","id":…,"result":{}};
//   - tools/call whose params have only "name" (a plain string naming a
//     tool registered with addTool, except stratum_wait_gate) and
//     "arguments" (an object), once the session is initialised at a
//     protocol version before 2026-07-28 (whose results carry no
//     resultType): the tool's body runs with a CallToolRequest of that
//     session, and its result is written as the session writes a
//     CallToolResult of one text content and structured content.
//
// Everything else — initialize, notifications, any _meta (progress tokens,
// per-request protocol versions), a call before initialisation, unknown
// tools, other methods, stratum_wait_gate — goes to the session as before.
// A lean call holds its in-flight slot and id like any other call, and a
// notifications/cancelled naming it cancels its context (the session is
// told too, and ignores an id it does not know); a call that ends with its
// context's error is answered with the error response the session would
// write.

// leanWorkers runs the lean calls of a connection, each in a goroutine of
// its own, on goroutines kept between calls: a new goroutine starts on a
// small stack, which a call (encoding/json, bbolt, the engine) grew by
// copying it several times over — about a tenth of an audit's time. A
// worker that finishes a call waits for the next until ctx (the
// connection's) ends; a call that finds none waiting starts one, so there
// are never more workers than calls ever in flight at once (maxInFlight).
type leanWorkers struct {
	next chan func() // unbuffered: a send is taken by a waiting worker
	once sync.Once
}

// run runs f on a waiting worker, or on a new one.
func (w *leanWorkers) run(ctx context.Context, f func()) {
	w.once.Do(func() { w.next = make(chan func()) })
	select {
	case w.next <- f:
	default:
		go w.work(ctx, f)
	}
}

func (w *leanWorkers) work(ctx context.Context, f func()) {
	for {
		f()
		select {
		case f = <-w.next:
		case <-ctx.Done():
			return
		}
	}
}

// leanCalls answers the lean calls of one server.
type leanCalls struct {
	srv   *mcp.Server
	tools map[string]toolRun

	mu sync.Mutex
	ss *mcp.ServerSession // the session, once initialised
}

// leanRun computes a lean call's result (the JSON of the response's
// "result"), or fails with the error the session would answer.
type leanRun func(ctx context.Context) (json.RawMessage, error)

// pong is a ping's result.
var pong = json.RawMessage(`{}`)

// take returns how to answer the call req, or nil when the session must
// handle it. l may be nil (no lean path).
func (l *leanCalls) take(req *jsonrpc.Request) leanRun {
	if l == nil {
		return nil
	}
	switch req.Method {
	case "ping":
		if p := bytes.TrimSpace(req.Params); len(p) != 0 && string(p) != "{}" || l.session() == nil {
			return nil
		}
		return func(context.Context) (json.RawMessage, error) { return pong, nil }
	case "tools/call":
		name, args, ok := toolCallParams(req.Params)
		if !ok || name == "stratum_wait_gate" {
			return nil
		}
		run := l.tools[name]
		ss := l.session()
		if run == nil || ss == nil {
			return nil
		}
		return func(ctx context.Context) (json.RawMessage, error) {
			b, isErr, err := run(ctx, &mcp.CallToolRequest{Session: ss, Params: &mcp.CallToolParamsRaw{Name: name, Arguments: args}})
			if err != nil {
				return nil, err
			}
			return toolResult(b, isErr)
		}
	}
	return nil
}

// session returns the server's session once it is initialised at a
// protocol version whose tool results the lean path writes, else nil.
func (l *leanCalls) session() *mcp.ServerSession {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ss != nil {
		return l.ss
	}
	for ss := range l.srv.Sessions() {
		p := ss.InitializeParams()
		// The SDK marks results with a resultType from 2026-07-28 on
		// (go-sdk mcp/mrtr.go, clientSupportsMultiRoundTrip).
		if p != nil && p.ProtocolVersion < "2026-07-28" {
			l.ss = ss
		}
		break // a stdio server has one session
	}
	return l.ss
}

// toolCallParams returns the tool name and arguments of tools/call params
// that have only "name" (a plain string) and "arguments" (an object, or
// absent: nil), each once; ok false for any other params.
func toolCallParams(params json.RawMessage) (name string, args json.RawMessage, ok bool) {
	var n []byte
	ok = scanObject(params, func(key, v []byte) bool {
		switch {
		case string(key) == `"name"` && n == nil && plainString(v):
			n = v
		case string(key) == `"arguments"` && args == nil && v[0] == '{':
			args = json.RawMessage(v)
		default:
			return false
		}
		return true
	})
	if !ok || n == nil {
		return "", nil, false
	}
	return string(n[1 : len(n)-1]), args, true
}

// toolResult is the JSON the session writes of a CallToolResult with the
// text content b, b as structured content and isError: the SDK marshals
// the text with encoding/json (state.AppendJSONString writes the same
// string) and copies the structured content (b, compact JSON from
// encoding/json) as is.
func toolResult(b []byte, isErr bool) (json.RawMessage, error) {
	const head, mid, tail = `{"content":[{"type":"text","text":`, `}],"structuredContent":`, `,"isError":true}`
	out := make([]byte, 0, len(head)+len(b)+len(b)/8+16+len(mid)+len(b)+len(tail))
	out = append(out, head...)
	out = state.AppendJSONString(out, string(b))
	out = append(out, mid...)
	out = append(out, b...)
	if isErr {
		return append(out, tail...), nil
	}
	return append(out, '}'), nil
}
