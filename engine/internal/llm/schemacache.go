package llm

import (
	"encoding/json"
	"sync"
	"sync/atomic"
)

// maxProjections bounds the encoded projections kept (a program has a
// handful of output schemas; a long-lived server whose specs change keeps
// at most this many, then encodes the others per request).
const maxProjections = 4096

// projections holds each dialect's encoded projection of an output
// schema by Request.SchemaKey.
var (
	projections     sync.Map // projectionKey → projection
	projectionCount atomic.Int64
)

type projectionKey struct{ dialect, key string }

type projection struct {
	schema json.RawMessage
	strict bool
}

// projected is project(schema), encoded without HTML escaping (as the
// whole body is), with project's strict flag; the encoding is made once
// per key and dialect when key is set. The cached bytes are those the
// projection encodes to inside the body, so a body holds the same bytes
// either way.
func projected(dialect, key string, schema map[string]any, project func(map[string]any) (map[string]any, bool)) (json.RawMessage, bool, error) {
	k := projectionKey{dialect, key}
	if key != "" {
		if p, ok := projections.Load(k); ok {
			return p.(projection).schema, p.(projection).strict, nil
		}
	}
	out, strict := project(schema)
	b, err := marshal(out)
	if err != nil {
		return nil, false, err
	}
	if key != "" && projectionCount.Load() < maxProjections {
		if _, loaded := projections.LoadOrStore(k, projection{schema: b, strict: strict}); !loaded {
			projectionCount.Add(1)
		}
	}
	return b, strict, nil
}
