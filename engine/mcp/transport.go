package mcp

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioTransport is the transport Serve runs on: in and out as newline
// delimited JSON-RPC, every inbound frame checked by a frameGuard
// (frames.go). It replaces the SDK's IOTransport, whose connection decoded
// every frame three more times after the guard had decoded it (a
// json.Decoder pass, a batch attempt, then jsonrpc.DecodeMessage): here
// the message the guard decoded is the one the session gets. Writes of the
// session and of the guard go through one lock, a whole frame at a time.
type stdioTransport struct {
	guard *frameGuard
	out   *lockedWriter
}

func newStdioTransport(in io.ReadCloser, out io.Writer, log *slog.Logger) *stdioTransport {
	w := &lockedWriter{w: out}
	return &stdioTransport{guard: &frameGuard{src: in, r: bufio.NewReaderSize(in, 1<<16), out: w, log: log}, out: w}
}

// Connect implements mcp.Transport. The connection reads the input in a
// goroutine of its own until the input ends or the connection is closed.
func (t *stdioTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &stdioConn{guard: t.guard, out: t.out, incoming: make(chan inbound), closed: make(chan struct{})}
	go c.readLoop()
	return c, nil
}

// stdioConn is an mcp.Connection over the guarded input and the output. As
// the SDK's stdio connection does, it reads in a goroutine so that Close
// unblocks a Read waiting for input (stdin cannot be interrupted); closing
// it closes the input and leaves the output open. It refuses batches (the
// guard answers them), so it needs none of the SDK connection's batch
// bookkeeping.
type stdioConn struct {
	guard    *frameGuard
	out      *lockedWriter
	incoming chan inbound

	closeOnce sync.Once
	closed    chan struct{}
	closeErr  error
}

// inbound is a decoded message or the input's error.
type inbound struct {
	msg jsonrpc.Message
	err error
}

func (c *stdioConn) readLoop() {
	for {
		_, msg, err := c.guard.next()
		select {
		case c.incoming <- inbound{msg, err}:
		case <-c.closed:
			return
		}
		if err != nil {
			return
		}
	}
}

// Read implements mcp.Connection: the next accepted message, the input's
// error at its end, or io.EOF once the connection is closed.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	default:
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case in := <-c.incoming:
		return in.msg, in.err
	case <-c.closed:
		return nil, io.EOF
	}
}

// Write implements mcp.Connection: msg as one line.
func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	default:
	}
	data, err := encodeMessage(msg)
	if err != nil {
		return fmt.Errorf("marshaling message: %v", err)
	}
	_, err = c.out.Write(append(data, '\n'))
	return err
}

// Close implements mcp.Connection; it closes the input once.
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() {
		c.closeErr = c.guard.Close()
		close(c.closed)
	})
	return c.closeErr
}

// SessionID implements mcp.Connection: a stdio connection has none.
func (*stdioConn) SessionID() string { return "" }

// encodeMessage is jsonrpc.EncodeMessage. A successful response is
// written as the envelope EncodeMessage makes of its id with the result
// spliced in as is: EncodeMessage would pass the result through
// encoding/json's compaction (a scan and a copy of the whole answer, twice
// the engine's JSON for a tool call), which leaves it unchanged, since the
// session's responses carry results that the SDK marshalled with
// encoding/json (jsonrpc2.NewResponse: compact, HTML characters not
// escaped). Anything else goes through EncodeMessage.
func encodeMessage(msg jsonrpc.Message) ([]byte, error) {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || resp.Error != nil || len(resp.Result) == 0 {
		return jsonrpc.EncodeMessage(msg)
	}
	env, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: resp.ID})
	if err != nil || len(env) == 0 || env[len(env)-1] != '}' {
		return jsonrpc.EncodeMessage(msg)
	}
	const key = `,"result":`
	data := make([]byte, 0, len(env)+len(key)+len(resp.Result)+2) // +2: '}' and the newline
	data = append(data, env[:len(env)-1]...)
	data = append(data, key...)
	data = append(data, resp.Result...)
	return append(data, '}'), nil
}
