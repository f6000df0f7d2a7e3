package jsonlimit

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// Limits on JSON that comes from outside: an MCP frame (engine/mcp checks
// each one before the SDK decodes it) and a step result or flow inputs given
// to the CLI (stratum step-done --result/--result-file, plan and run
// --inputs). The same rule for both, so neither accepts what the other
// refuses.
const (
	// MaxBytes is the largest document: 16 MiB.
	MaxBytes = 16 << 20
	// MaxDepth bounds the nesting of arrays and objects. Over MCP the
	// JSON-RPC envelope takes 3 of these levels (params, arguments, result).
	MaxDepth = 256
)

// Error says which limit a document exceeded.
type Error struct {
	// TooDeep: the nesting exceeds MaxDepth; otherwise the size exceeds
	// MaxBytes.
	TooDeep bool
}

func (e *Error) Error() string {
	if e.TooDeep {
		return fmt.Sprintf("JSON is nested deeper than %d levels", MaxDepth)
	}
	return fmt.Sprintf("JSON is larger than %d MiB (%d bytes)", MaxBytes>>20, MaxBytes)
}

// Check reports a *Error when data is larger than
// MaxBytes or nests arrays and objects deeper than MaxDepth. It is
// one pass over the bytes that does not decode (nor fully validate) them.
func Check(data []byte) error {
	if len(data) > MaxBytes {
		return &Error{}
	}
	depth, inString, escaped := 0, false, false
	for _, c := range data {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
			if depth > MaxDepth {
				return &Error{TooDeep: true}
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return nil
}

// Read reads a document from r, refusing one larger than MaxBytes
// without reading more than one byte past the limit.
func Read(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxBytes {
		return nil, &Error{}
	}
	return data, nil
}

// ReadFile is Read of a file.
func ReadFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return data, nil
}

// Decode checks data against the limits, then unmarshals it into v.
func Decode(data []byte, v any) error {
	if err := Check(data); err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}
