package mcp

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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
	m, err = c.Read(ctx)
	if resp, ok := m.(*jsonrpc.Response); err != nil || !ok || resp.ID.Raw() != "x" || string(resp.Result) != "{}" {
		t.Fatalf("second: %#v, %v", m, err)
	}
	if m, err = c.Read(ctx); !errors.Is(err, io.EOF) {
		t.Fatalf("at the end: %#v, %v", m, err)
	}
	if !strings.Contains(out.String(), `"id":2`) {
		t.Fatalf("the refused frame is not answered: %q", out.String())
	}
}

// TestStdioConnClose: Close unblocks a Read waiting for input, and later
// Reads report the end.
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
