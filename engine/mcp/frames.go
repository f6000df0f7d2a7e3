package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/stratum-go/stratum/engine/internal/jsonlimit"
)

// The SDK's stdio connection (go-sdk mcp/transport.go, ioConn) reads
// frames with one json.Decoder in a goroutine and ends the session on the
// first error: a frame over its 16 MiB line limit, a syntax error, nesting
// beyond encoding/json's 10,000 levels, a message its own decoder refuses
// (internal/json: more than 1,000 levels; not a JSON-RPC message) or a batch
// after protocol 2025-06-18. So one hostile line ended the server. The guard
// below reads stdin for our own connection (transport.go): it reads one line
// (one message, as MCP's stdio framing says), passes on only frames that
// decode to a message as the SDK decodes them (jsonrpc.DecodeMessage), and
// answers every other one itself with a JSON-RPC error, then reads the next
// line.

// JSON-RPC error codes of refused frames.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

// idPrefix is how much of an oversized frame is kept to find its id.
const idPrefix = 64 << 10

// frameGuard is the inbound side of stdioTransport (transport.go).
type frameGuard struct {
	src io.ReadCloser
	r   *bufio.Reader
	out io.Writer
	log *slog.Logger
	err error // the input's error, returned once the frames before it are
	// id is the exact text of the id of the frame next returned last, when
	// it is a call (nil otherwise).
	id json.RawMessage
}

// next returns the next accepted frame (without its newline) and the
// message it decodes to, answering and skipping every refused one; at the
// end of the input, the input's error (io.EOF).
func (g *frameGuard) next() ([]byte, jsonrpc.Message, error) {
	for g.err == nil {
		line, tooLong, err := g.readLine()
		g.err = err
		if msg := g.admit(line, tooLong); msg != nil {
			return line, msg, nil
		}
	}
	return nil, nil, g.err
}

// Close closes the input.
func (g *frameGuard) Close() error { return g.src.Close() }

// readLine reads one line without its newline. A line longer than
// jsonlimit.MaxBytes is read to its end but only its first idPrefix bytes
// are kept (tooLong).
func (g *frameGuard) readLine() (line []byte, tooLong bool, err error) {
	for {
		chunk, err := g.r.ReadSlice('\n')
		switch {
		case tooLong:
		case len(line)+len(chunk) > jsonlimit.MaxBytes+1: // +1: the newline
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

// admit returns the message a frame decodes to, or nil for a blank line
// or after answering a frame the SDK's stdio connection would end the
// session on.
func (g *frameGuard) admit(line []byte, tooLong bool) jsonrpc.Message {
	if len(bytes.TrimSpace(line)) == 0 && !tooLong {
		return nil
	}
	code, msg := codeInvalidRequest, ""
	switch {
	case tooLong:
		msg = "request refused: " + (&jsonlimit.Error{}).Error()
	case jsonlimit.Check(line) != nil:
		msg = "request refused: " + jsonlimit.Check(line).Error()
	case !json.Valid(line):
		code, msg = codeParseError, "parse error: the frame is not valid JSON"
	case bytes.TrimSpace(line)[0] == '[':
		msg = "request refused: batch requests are not supported"
	default:
		if req, id, ok := decodeCommon(line); ok {
			g.id = nil
			if req.IsCall() {
				g.id = id
			}
			return req
		}
		m, err := jsonrpc.DecodeMessage(line)
		if err != nil {
			msg = "request refused: not a JSON-RPC message: " + err.Error()
			break
		}
		req, isReq := m.(*jsonrpc.Request)
		if !isReq {
			g.id = nil
			return m
		}
		// The SDK reads "id": null as no id (a notification: no answer)
		// and an id of 1.5 as 1; JSON-RPC allows only strings and numbers,
		// and the answer must carry the id exactly as sent.
		id, present := idOf(line)
		if present && !validID(id) {
			msg = "request refused: the id must be a string or a number"
			break
		}
		g.id = nil
		if req.IsCall() {
			g.id = id
		}
		return m
	}
	g.log.Warn("refused an MCP frame", "bytes", len(line), "too_long", tooLong, "reason", msg)
	g.answer(line, code, msg)
	return nil
}

// answerID writes one JSON-RPC error response with the given id.
func (g *frameGuard) answerID(id json.RawMessage, code int, msg string) {
	var e rpcError
	e.JSONRPC, e.ID, e.Error.Code, e.Error.Message = "2.0", id, code, msg
	data, err := marshalExact(e)
	if err != nil {
		return
	}
	if _, err := g.out.Write(data); err != nil {
		g.log.Warn("answering a refused MCP frame", "error", err)
	}
}

// marshalExact is v as one line of JSON ending in a newline, without
// encoding/json's HTML escaping, so an id is written back as it was sent.
func marshalExact(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
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
	var v any = out[0]
	if len(batch) > 0 {
		v = out
	}
	data, err := marshalExact(v)
	if err != nil {
		return
	}
	if _, err := g.out.Write(data); err != nil {
		g.log.Warn("answering a refused MCP frame", "error", err)
	}
}

// frameID returns the id of a (possibly cut short, too deep or invalid)
// JSON-RPC request, exactly as written: a string or number under the
// top-level key "id", or nil.
func frameID(line []byte) json.RawMessage {
	if id, _ := idOf(line); validID(id) {
		return id
	}
	return nil
}

// validID reports whether id is a JSON string or number (JSON-RPC's ids;
// null, arrays, objects and booleans are not).
func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	c := id[0]
	return c == '"' || c == '-' || c >= '0' && c <= '9'
}

// idOf returns the text of the value under the top-level key "id" of a
// frame, exactly as written, and whether the key is there. It reads tokens
// without recursion and stops at the first error (a frame cut short still
// yields an id written before the cut).
func idOf(line []byte) (json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, false
		}
		if k == "id" {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return nil, true
			}
			return raw, true
		}
		for depth := 0; ; { // skip the value
			t, err := dec.Token()
			if err != nil {
				return nil, false
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
	return nil, false
}
