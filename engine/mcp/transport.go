package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
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
// With lean set, the connection answers the plainest tools/call and ping
// frames itself (lean.go).
type stdioTransport struct {
	guard *frameGuard
	out   *lockedWriter
	lean  *leanCalls
}

func newStdioTransport(in io.ReadCloser, out io.Writer, log *slog.Logger) *stdioTransport {
	w := &lockedWriter{w: out}
	return &stdioTransport{guard: &frameGuard{src: in, r: bufio.NewReaderSize(in, 1<<16), out: w, log: log}, out: w}
}

// maxInFlight is how many calls the connection lets in before their
// answers are written: past it, it reads no more frames, so a client that
// stops reading the answers stops the server reading (its writes block)
// instead of growing the server's memory with requests it executes.
const maxInFlight = 64

// Connect implements mcp.Transport. The connection reads the input in a
// goroutine of its own until the input ends or the connection is closed.
func (t *stdioTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &stdioConn{guard: t.guard, out: t.out, incoming: make(chan inbound), closed: make(chan struct{}),
		slots: make(chan struct{}, maxInFlight), calls: map[int64]json.RawMessage{}, byID: map[string]int64{},
		lean: t.lean, leanCancel: map[int64]context.CancelFunc{}}
	c.leanCtx, c.leanStop = context.WithCancel(context.Background())
	go c.readLoop()
	return c, nil
}

// stdioConn is an mcp.Connection over the guarded input and the output. As
// the SDK's stdio connection does, it reads in a goroutine so that Close
// unblocks a Read waiting for input (stdin cannot be interrupted); closing
// it closes the input and leaves the output open. It refuses batches (the
// guard answers them), so it needs none of the SDK connection's batch
// bookkeeping.
//
// Ids: the SDK keeps an id as an int64 or a string (1.5 became 1, a big
// integer lost digits, a string was re-encoded), so every call is handed to
// the session under an id of ours (1, 2, …) and its answer is written with
// the client's id exactly as it was sent; a notifications/cancelled names
// our id too. A call whose id is still in flight is refused.
//
// Flow control: a call holds one of maxInFlight slots from the frame's read
// to its answer's write; Read waits for a free slot before it reads. At the
// end of the input, Read returns the input's error only once every call
// already read is answered, so the session (which cancels its in-flight
// requests when Read fails) finishes them first.
//
// Lean calls (lean.go) are admitted the same way (our id, a slot), run in a
// goroutine of their own (leanWorkers) instead of being returned by Read, and answered
// through Write; their contexts end with the connection or when a
// notifications/cancelled names them.
type stdioConn struct {
	guard    *frameGuard
	out      *lockedWriter
	incoming chan inbound
	slots    chan struct{}

	lean     *leanCalls
	leanCtx  context.Context
	leanStop context.CancelFunc
	workers  leanWorkers

	mu     sync.Mutex
	calls  map[int64]json.RawMessage // our id → the client's
	byID   map[string]int64          // the client's id → ours
	lastID int64
	endErr error // the input's error, once every call is answered
	// leanCancel cancels a lean call in flight, by our id.
	leanCancel map[int64]context.CancelFunc

	closeOnce sync.Once
	closed    chan struct{}
	closeErr  error
}

// inbound is a decoded message (id: the text of a call's id) or the
// input's error.
type inbound struct {
	msg jsonrpc.Message
	id  json.RawMessage
	err error
}

func (c *stdioConn) readLoop() {
	for {
		_, msg, err := c.guard.next()
		select {
		case c.incoming <- inbound{msg, c.guard.id, err}:
		case <-c.closed:
			return
		}
		if err != nil {
			return
		}
	}
}

// Read implements mcp.Connection: the next accepted message, the input's
// error at its end (once every call read is answered), or io.EOF once the
// connection is closed.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		default:
		}
		if c.endErr != nil {
			return nil, c.endErr
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closed:
			return nil, io.EOF
		case c.slots <- struct{}{}:
		}
		var in inbound
		select {
		case <-ctx.Done():
			<-c.slots
			return nil, ctx.Err()
		case in = <-c.incoming:
		case <-c.closed:
			<-c.slots
			return nil, io.EOF
		}
		if in.err != nil {
			<-c.slots
			if c.isClosed() {
				// The input failed because Close closed it: the
				// connection's end, not the input's error.
				return nil, io.EOF
			}
			return nil, c.drain(ctx, in.err)
		}
		if msg, ok := c.admit(in); ok {
			return msg, nil
		}
	}
}

// admit gives a call our id and keeps its slot; any other message gives the
// slot back (a notifications/cancelled of a call in flight is rewritten to
// name our id). It answers and drops a call whose id is in flight, and
// starts a lean call (lean.go) instead of returning it.
func (c *stdioConn) admit(in inbound) (jsonrpc.Message, bool) {
	req, ok := in.msg.(*jsonrpc.Request)
	if !ok || !req.IsCall() || in.id == nil {
		<-c.slots
		if ok && req.Method == "notifications/cancelled" {
			c.renameCancelled(req)
		}
		return in.msg, true
	}
	c.mu.Lock()
	if _, dup := c.byID[string(in.id)]; dup {
		c.mu.Unlock()
		<-c.slots
		c.guard.answerID(in.id, codeInvalidRequest, "request refused: a request with this id is still in flight")
		return nil, false
	}
	c.lastID++
	ours := c.lastID
	c.calls[ours], c.byID[string(in.id)] = in.id, ours
	run := c.lean.take(req)
	var ctx context.Context
	if run != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(c.leanCtx)
		c.leanCancel[ours] = cancel
	}
	c.mu.Unlock()
	req.ID, _ = jsonrpc.MakeID(float64(ours))
	if run != nil {
		c.workers.run(c.leanCtx, func() { c.answerLean(ctx, req.ID, run) })
		return nil, false
	}
	return req, true
}

// answerLean runs a lean call and writes its answer (Write frees its slot).
func (c *stdioConn) answerLean(ctx context.Context, id jsonrpc.ID, run leanRun) {
	result, err := run(ctx)
	resp := &jsonrpc.Response{ID: id, Result: result, Error: err}
	if err != nil {
		resp.Result = nil
	}
	if werr := c.Write(context.Background(), resp); werr != nil {
		c.guard.log.Warn("writing an MCP answer", "error", werr)
	}
	n, _ := id.Raw().(int64)
	c.mu.Lock()
	cancel := c.leanCancel[n]
	delete(c.leanCancel, n)
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// renameCancelled rewrites the requestId of a notifications/cancelled that
// names a call in flight to our id for it.
func (c *stdioConn) renameCancelled(req *jsonrpc.Request) {
	var params map[string]json.RawMessage
	if json.Unmarshal(req.Params, &params) != nil {
		return
	}
	c.mu.Lock()
	ours, ok := c.byID[string(params["requestId"])]
	if cancel := c.leanCancel[ours]; ok && cancel != nil {
		cancel()
	}
	c.mu.Unlock()
	if !ok {
		return
	}
	params["requestId"] = json.RawMessage(strconv.FormatInt(ours, 10))
	if b, err := json.Marshal(params); err == nil {
		req.Params = b
	}
}

// drain waits until every call in flight is answered, then returns (and
// keeps) err.
func (c *stdioConn) drain(ctx context.Context, err error) error {
	for range cap(c.slots) {
		select {
		case c.slots <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		case <-c.closed:
			return io.EOF
		}
	}
	for range cap(c.slots) {
		<-c.slots
	}
	c.endErr = err
	return err
}

// Write implements mcp.Connection: msg as one line. The answer to a call
// carries the client's id and frees the call's slot.
func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	var clientID json.RawMessage
	var ours int64
	if resp, ok := msg.(*jsonrpc.Response); ok {
		if n, ok := resp.ID.Raw().(int64); ok {
			c.mu.Lock()
			if id, found := c.calls[n]; found {
				clientID, ours = id, n
				delete(c.calls, n)
				delete(c.byID, string(id))
			}
			c.mu.Unlock()
		}
	}
	if clientID != nil {
		defer func() { <-c.slots }()
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	default:
	}
	data, err := encodeMessage(msg)
	if err != nil {
		return fmt.Errorf("marshaling message: %v", err)
	}
	if clientID != nil {
		data = withID(data, ours, clientID)
	}
	_, err = c.out.Write(append(data, '\n'))
	return err
}

// withID replaces our id at the head of an encoded response
// ({"jsonrpc":"2.0","id":<ours>,…}) with the client's.
func withID(data []byte, ours int64, id json.RawMessage) []byte {
	head := `{"jsonrpc":"2.0","id":` + strconv.FormatInt(ours, 10)
	if len(data) <= len(head) || string(data[:len(head)]) != head || (data[len(head)] != ',' && data[len(head)] != '}') {
		return data // not the shape EncodeMessage makes: leave it
	}
	out := make([]byte, 0, len(data)-len(head)+len(id)+22)
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, id...)
	return append(out, data[len(head):]...)
}

// Close implements mcp.Connection; it closes the input once.
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() {
		// closed first: a Read that gets the error of the input closed
		// below finds the connection closed and reports io.EOF.
		close(c.closed)
		c.leanStop()
		c.closeErr = c.guard.Close()
	})
	return c.closeErr
}

// isClosed reports whether Close was called.
func (c *stdioConn) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
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
