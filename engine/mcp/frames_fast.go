package mcp

import (
	"bytes"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The common frame — a request or notification whose top-level keys are
// only "jsonrpc" ("2.0"), "method" (a plain string), "id" (a plain string
// or a number) and "params" (an object), each once — is decoded here, by
// one scan of its top level, to the very request jsonrpc.DecodeMessage
// makes of it. DecodeMessage runs the SDK's decoder twice per frame and
// each run allocates a 32 KiB buffer (segmentio's minimum), most of what a
// call allocated. Any other frame (escapes in the strings, other keys, a
// key twice, params that are not an object) goes to DecodeMessage as
// before, so what is accepted and refused, and how, does not change.

// decodeCommon returns the request the valid (json.Valid, within
// jsonlimit) frame line decodes to and its id's text (nil for a
// notification), or ok false when the frame is not of the common form.
// The request's Params alias line.
func decodeCommon(line []byte) (req *jsonrpc.Request, id []byte, ok bool) {
	var version, method, params []byte
	ok = scanObject(line, func(key, v []byte) bool {
		var slot *[]byte
		switch string(key) {
		case `"jsonrpc"`:
			slot = &version
		case `"method"`:
			slot = &method
		case `"id"`:
			slot = &id
		case `"params"`:
			slot = &params
		default:
			return false
		}
		if *slot != nil {
			return false // a key twice
		}
		*slot = v
		return true
	})
	if !ok {
		return nil, nil, false
	}
	if string(version) != `"2.0"` || !plainString(method) || params != nil && params[0] != '{' {
		return nil, nil, false
	}
	var idv any
	switch {
	case id == nil:
	case plainString(id):
		idv = string(id[1 : len(id)-1])
	case id[0] == '-' || id[0] >= '0' && id[0] <= '9':
		f, err := strconv.ParseFloat(string(id), 64)
		if err != nil {
			return nil, nil, false
		}
		idv = f
	default:
		return nil, nil, false
	}
	rid, err := jsonrpc.MakeID(idv)
	if err != nil {
		return nil, nil, false
	}
	return &jsonrpc.Request{Method: string(method[1 : len(method)-1]), ID: rid, Params: params}, id, true
}

// scanObject calls visit with the text of each key (quotes included) and
// value of the top level of obj, a JSON object in valid JSON, in order,
// until visit returns false; it reports whether obj is an object and every
// visit returned true.
func scanObject(obj []byte, visit func(key, v []byte) bool) bool {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return false
	}
	i = skipSpace(obj, i+1)
	for i < len(obj) && obj[i] != '}' {
		kEnd := skipValue(obj, i)
		key := obj[i:kEnd]
		i = skipSpace(obj, kEnd)
		if i >= len(obj) || obj[i] != ':' {
			return false
		}
		vStart := skipSpace(obj, i+1)
		vEnd := skipValue(obj, vStart)
		if vEnd <= vStart || !visit(key, obj[vStart:vEnd]) {
			return false
		}
		i = skipSpace(obj, vEnd)
		if i < len(obj) && obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
	}
	return i < len(obj)
}

// plainString reports whether v is a JSON string without escapes or
// non-ASCII bytes (its text is its value).
func plainString(v []byte) bool {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return false
	}
	for _, c := range v[1 : len(v)-1] {
		if c == '\\' || c < 0x20 || c >= 0x80 {
			return false
		}
	}
	return true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the end of the JSON value starting at b[i] in valid
// JSON b.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	default:
		j := i
		for j < len(b) && bytes.IndexByte([]byte(",}] \t\r\n"), b[j]) < 0 {
			j++
		}
		return j
	}
}

// skipString returns the end of the JSON string starting at b[i].
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}
