package llm

import (
	"bytes"
	"encoding/json"

	sjson "github.com/segmentio/encoding/json"
)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// decodeResponse decodes a provider's answer into v (a pointer to a
// zero struct) as encoding/json does: with github.com/segmentio/encoding/json
// (a drop-in replacement: the same values, fewer allocations;
// TestDecodeResponseAsEncodingJSON), and with encoding/json itself when
// that fails, for its result and its error.
func decodeResponse[T any](b []byte, v *T) error {
	if sjson.Unmarshal(b, v) == nil {
		return nil
	}
	var zero T
	*v = zero
	return json.Unmarshal(b, v)
}

// marshal encodes v without HTML escaping.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}
