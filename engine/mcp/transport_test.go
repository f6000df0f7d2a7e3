package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestStdioConnRead: the connection yields the accepted messages in order,
// then the input's end; a refused frame is answered, not passed on.
func TestStdioConnRead(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n" + `{"id":2` + "\n" + `{"jsonrpc":"2.0","id":"x","result":{}}`
	var out strings.Builder
	tr := newStdioTransport(io.NopCloser(strings.NewReader(in)), &out, slog.New(slog.NewTextHandler(io.Discard, nil)))
	c, err := tr.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	m, err := c.Read(ctx)
	if req, ok := m.(*jsonrpc.Request); err != nil || !ok || req.Method != "ping" || req.ID.Raw() != int64(1) {
		t.Fatalf("first: %#v, %v", m, err)
	}
	ping := m.(*jsonrpc.Request)
	m, err = c.Read(ctx)
	if resp, ok := m.(*jsonrpc.Response); err != nil || !ok || resp.ID.Raw() != "x" || string(resp.Result) != "{}" {
		t.Fatalf("second: %#v, %v", m, err)
	}
	// The end of the input is reported once the ping read before it is
	// answered.
	ended := make(chan error, 1)
	go func() { _, err := c.Read(ctx); ended <- err }()
	select {
	case err := <-ended:
		t.Fatalf("the end reported with a call unanswered: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	if err := c.Write(ctx, &jsonrpc.Response{ID: ping.ID, Result: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if err := <-ended; !errors.Is(err, io.EOF) {
		t.Fatalf("at the end: %v", err)
	}
	if !strings.Contains(out.String(), `{"jsonrpc":"2.0","id":1,"result":{}}`) {
		t.Fatalf("the ping's answer: %q", out.String())
	}
	if !strings.Contains(out.String(), `"id":2`) {
		t.Fatalf("the refused frame is not answered: %q", out.String())
	}
}

// TestStdioConnCloseRacingRead: a Read and a Close at the same moment, in
// either order: the Read reports io.EOF, never the error of the input Close
// closed (the Read could receive it before: io: read/write on closed pipe,
// seen under load), and so does the next Read. The input's Close returns
// only after its pending Read has failed, which widens the window.
func TestStdioConnCloseRacingRead(t *testing.T) {
	for i := range 100 {
		in := newClosingReader()
		tr := newStdioTransport(in, io.Discard, slog.New(slog.NewTextHandler(io.Discard, nil)))
		c, err := tr.Connect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		read := func() { _, err := c.Read(context.Background()); done <- err }
		if i%2 == 0 {
			go read()
			time.Sleep(time.Millisecond)
			_ = c.Close()
		} else {
			_ = c.Close()
			go read()
		}
		if err := <-done; !errors.Is(err, io.EOF) {
			t.Fatalf("run %d: Read racing Close: %v", i, err)
		}
		if _, err := c.Read(context.Background()); !errors.Is(err, io.EOF) {
			t.Fatalf("run %d: Read after Close: %v", i, err)
		}
	}
}

// closingReader is an input that never has data: Close fails its pending
// Read (io.ErrClosedPipe) and returns once that Read has returned.
type closingReader struct {
	closing, returned chan struct{}
	once              sync.Once
}

func newClosingReader() *closingReader {
	return &closingReader{closing: make(chan struct{}), returned: make(chan struct{}, 1)}
}

func (r *closingReader) Read([]byte) (int, error) {
	<-r.closing
	r.returned <- struct{}{}
	return 0, io.ErrClosedPipe
}

func (r *closingReader) Close() error {
	r.once.Do(func() {
		close(r.closing)
		<-r.returned
		time.Sleep(time.Millisecond)
	})
	return nil
}

// TestStdioConnClose: Close unblocks a Read waiting for input (when the
// Read has not started yet under load, it finds the connection closed:
// the same answer), and later Reads report the end.
func TestStdioConnClose(t *testing.T) {
	inR, inW := io.Pipe()
	defer inW.Close()
	tr := newStdioTransport(inR, io.Discard, slog.New(slog.NewTextHandler(io.Discard, nil)))
	c, err := tr.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := c.Read(context.Background()); done <- err }()
	time.Sleep(10 * time.Millisecond)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, io.EOF) {
			t.Fatalf("blocked Read after Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not unblock Read")
	}
	if _, err := c.Read(context.Background()); !errors.Is(err, io.EOF) {
		t.Fatalf("Read after Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Write(ctx, &jsonrpc.Response{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Write on a cancelled context: %v", err)
	}
}

// TestEncodeMessage: the connection writes every message as
// jsonrpc.EncodeMessage does, results the SDK marshalled included.
func TestEncodeMessage(t *testing.T) {
	result := func(v any) json.RawMessage {
		r, err := jsonrpc2NewResponse(v)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	sid, _ := jsonrpc.MakeID("a<b>&\u2028\"c\"")
	nid, _ := jsonrpc.MakeID(float64(42))
	text := "{\"k\":\"<&>\u2028\u2029 \\\" é\"}"
	msgs := []jsonrpc.Message{
		&jsonrpc.Response{ID: nid, Result: result(map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}, "structuredContent": json.RawMessage(text)})},
		&jsonrpc.Response{ID: sid, Result: result(map[string]any{})},
		&jsonrpc.Response{ID: nid, Result: result(&mcp.CallToolResult{StructuredContent: json.RawMessage(text), Content: []mcp.Content{&mcp.TextContent{Text: text}}})},
		&jsonrpc.Response{ID: nid, Error: &jsonrpc.Error{Code: -32602, Message: "bad <params>"}},
		&jsonrpc.Response{ID: sid, Result: result(map[string]any{}), Error: errors.New("failed")},
		&jsonrpc.Request{ID: nid, Method: "ping"},
		&jsonrpc.Request{Method: "notifications/progress", Params: json.RawMessage(`{"progress":1}`)},
	}
	for _, m := range msgs {
		want, err := jsonrpc.EncodeMessage(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeMessage(m)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("encodeMessage(%#v)\n got %s\nwant %s", m, got, want)
		}
	}
}

// jsonrpc2NewResponse is the result of a response as the SDK's
// jsonrpc2.NewResponse marshals it: encoding/json without HTML escaping.
func jsonrpc2NewResponse(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
