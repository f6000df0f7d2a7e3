package engine

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
	// MaxJSONBytes is the largest document: 16 MiB.
	MaxJSONBytes = 16 << 20
	// MaxJSONDepth bounds the nesting of arrays and objects. Over MCP the
	// JSON-RPC envelope takes 3 of these levels (params, arguments, result).
	MaxJSONDepth = 256
)

// JSONLimitError says which limit a document exceeded.
type JSONLimitError struct {
	// TooDeep: the nesting exceeds MaxJSONDepth; otherwise the size exceeds
	// MaxJSONBytes.
	TooDeep bool
}

func (e *JSONLimitError) Error() string {
	if e.TooDeep {
		return fmt.Sprintf("JSON is nested deeper than %d levels", MaxJSONDepth)
	}
	return fmt.Sprintf("JSON is larger than %d MiB (%d bytes)", MaxJSONBytes>>20, MaxJSONBytes)
}

// CheckJSONLimits reports a *JSONLimitError when data is larger than
// MaxJSONBytes or nests arrays and objects deeper than MaxJSONDepth. It is
// one pass over the bytes that does not decode (nor fully validate) them.
func CheckJSONLimits(data []byte) error {
	if len(data) > MaxJSONBytes {
		return &JSONLimitError{}
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
			if depth > MaxJSONDepth {
				return &JSONLimitError{TooDeep: true}
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return nil
}

// ReadJSON reads a document from r, refusing one larger than MaxJSONBytes
// without reading more than one byte past the limit.
func ReadJSON(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxJSONBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxJSONBytes {
		return nil, &JSONLimitError{}
	}
	return data, nil
}

// ReadJSONFile is ReadJSON of a file.
func ReadJSONFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := ReadJSON(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return data, nil
}

// DecodeJSON checks data against the limits, then unmarshals it into v.
func DecodeJSON(data []byte, v any) error {
	if err := CheckJSONLimits(data); err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}
