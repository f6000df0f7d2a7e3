package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stratum-go/stratum/engine"
)

// The SDK's stdio connection (go-sdk mcp/transport.go, ioConn) reads
// frames with one json.Decoder in a goroutine and ends the session on the
// first error: a frame over its 16 MiB line limit, a syntax error, nesting
// beyond encoding/json's 10,000 levels, a message its own decoder refuses
// (internal/json: more than 1,000 levels; not a JSON-RPC message) or a batch
// after protocol 2025-06-18. So one hostile line ended the server. The guard
// below sits between stdin and that connection: it reads one line (one
// message, as MCP's stdio framing says), passes on only frames the SDK will
// decode, and answers every other one itself with a JSON-RPC error, then
// reads the next line.

// JSON-RPC error codes of refused frames.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

// idPrefix is how much of an oversized frame is kept to find its id.
const idPrefix = 64 << 10

// stdioTransport is the transport Serve runs on: in and out as newline
// delimited JSON-RPC, every inbound frame checked by a frameGuard. Writes of
// the SDK and of the guard go through one lock, a whole frame at a time.
func stdioTransport(in io.ReadCloser, out io.Writer, log *slog.Logger) mcp.Transport {
	w := &frameWriter{lockedWriter: lockedWriter{w: out}}
	return &mcp.IOTransport{
		Reader:        &frameGuard{src: in, r: bufio.NewReaderSize(in, 1<<16), out: w, log: log},
		Writer:        w,
		MaxLineLength: -1, // the guard enforces engine.MaxJSONBytes per line
	}
}

// frameWriter is stdout shared by the SDK and the guard; closing it leaves
// stdout open, as the SDK's stdio transport does.
type frameWriter struct{ lockedWriter }

func (*frameWriter) Close() error { return nil }

// frameGuard is the inbound side of stdioTransport.
type frameGuard struct {
	src     io.ReadCloser
	r       *bufio.Reader
	out     io.Writer
	log     *slog.Logger
	pending []byte // the rest of an accepted frame, with its newline
	err     error  // the input's error, returned once pending is read
}

// Read implements io.Reader: the accepted frames, each ending in a newline.
func (g *frameGuard) Read(p []byte) (int, error) {
	for len(g.pending) == 0 {
		if g.err != nil {
			return 0, g.err
		}
		line, tooLong, err := g.readLine()
		g.err = err
		g.pending = g.admit(line, tooLong)
	}
	n := copy(p, g.pending)
	g.pending = g.pending[n:]
	return n, nil
}

// Close closes the input.
func (g *frameGuard) Close() error { return g.src.Close() }

// readLine reads one line without its newline. A line longer than
// engine.MaxJSONBytes is read to its end but only its first idPrefix bytes
// are kept (tooLong).
func (g *frameGuard) readLine() (line []byte, tooLong bool, err error) {
	for {
		chunk, err := g.r.ReadSlice('\n')
		switch {
		case tooLong:
		case len(line)+len(chunk) > engine.MaxJSONBytes+1: // +1: the newline
			tooLong = true
			line = append(line[:min(len(line), idPrefix)], chunk[:max(0, min(len(chunk), idPrefix-len(line)))]...)
		default:
			line = append(line, chunk...)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			if !tooLong {
				line = bytes.TrimRight(line, "\r\n")
			}
			return line, tooLong, err
		}
	}
}

// admit returns the frame to pass on (with a newline), or nil after
// answering a frame the SDK would end the session on.
func (g *frameGuard) admit(line []byte, tooLong bool) []byte {
	if len(bytes.TrimSpace(line)) == 0 && !tooLong {
		return nil
	}
	code, msg := codeInvalidRequest, ""
	switch {
	case tooLong:
		msg = "request refused: " + (&engine.JSONLimitError{}).Error()
	case engine.CheckJSONLimits(line) != nil:
		msg = "request refused: " + engine.CheckJSONLimits(line).Error()
	case !json.Valid(line):
		code, msg = codeParseError, "parse error: the frame is not valid JSON"
	case bytes.TrimSpace(line)[0] == '[':
		msg = "request refused: batch requests are not supported"
	default:
		if _, err := jsonrpc.DecodeMessage(line); err != nil {
			msg = "request refused: not a JSON-RPC message: " + err.Error()
		}
	}
	if msg == "" {
		return append(line, '\n')
	}
	g.log.Warn("refused an MCP frame", "bytes", len(line), "too_long", tooLong, "reason", msg)
	g.answer(line, code, msg)
	return nil
}

// rpcError is a JSON-RPC error response.
type rpcError struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// answer writes the error response to a refused frame: for each request of
// a batch (an array) whose id it finds, else one with the frame's id, or
// null when it is unknown.
func (g *frameGuard) answer(line []byte, code int, msg string) {
	var ids []json.RawMessage
	var batch []json.RawMessage
	if json.Unmarshal(line, &batch) == nil { // a valid array within the limits
		for _, m := range batch {
			if id := frameID(m); id != nil {
				ids = append(ids, id)
			}
		}
	}
	if len(ids) == 0 {
		ids = []json.RawMessage{frameID(line)}
	}
	out := make([]rpcError, len(ids))
	for i, id := range ids {
		if id == nil {
			id = json.RawMessage("null")
		}
		out[i].JSONRPC, out[i].ID, out[i].Error.Code, out[i].Error.Message = "2.0", id, code, msg
	}
	var data []byte
	var err error
	if len(batch) > 0 {
		data, err = json.Marshal(out)
	} else {
		data, err = json.Marshal(out[0])
	}
	if err != nil {
		return
	}
	if _, err := g.out.Write(append(data, '\n')); err != nil {
		g.log.Warn("answering a refused MCP frame", "error", err)
	}
}

// frameID returns the id of a (possibly cut short, too deep or invalid)
// JSON-RPC request: the string or number under the top-level key "id", or
// nil. It reads tokens without recursion and stops at the first error.
func frameID(line []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil
		}
		if k == "id" {
			switch v := mustToken(dec).(type) {
			case string:
				b, _ := json.Marshal(v)
				return b
			case json.Number:
				return json.RawMessage(v)
			}
			return nil
		}
		for depth := 0; ; { // skip the value
			t, err := dec.Token()
			if err != nil {
				return nil
			}
			if d, ok := t.(json.Delim); ok {
				if d == '{' || d == '[' {
					depth++
				} else {
					depth--
				}
			}
			if depth == 0 {
				break
			}
		}
	}
	return nil
}

// mustToken is dec.Token with an error read as no token.
func mustToken(dec *json.Decoder) json.Token {
	t, err := dec.Token()
	if err != nil {
		return nil
	}
	return t
}
