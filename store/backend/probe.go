package backend

import (
	"context"
	"errors"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/store/shared"
)

// ProbeResult is what `stratum doctor` learns of the store the settings
// select.
type ProbeResult struct {
	// Name is the store as a header shows it ("bbolt PATH", "etcd etcd://…").
	Name string
	// Schema is the schema version it holds (after Open migrated it).
	Schema int
	// Flows is how many flows it holds.
	Flows int
	// Open is why it did not open (nil: it opened); a store written by a
	// newer stratum, a corrupt file, an unreachable cluster are said here.
	Open error
	// Read is why a read failed once it opened.
	Read error
	// Write is why a write transaction could not start (nil: it can).
	// WriteProbed is false when no probe writes nothing on this backend
	// (etcd: permissions are checked per key, by the first real write).
	Write       error
	WriteProbed bool
}

// Probe opens the store s selects, as every command does (a file of an
// older schema is migrated then), reads its schema and counts, and on
// bbolt starts a write transaction that writes nothing: the file opened
// read-write under the write lock (and checked page by page when no stratum
// commit left it as it is), then rolled back.
func Probe(ctx context.Context, s shared.Settings) ProbeResult {
	var r ProbeResult
	if loc, err := s.Location(); err == nil {
		r.Name = loc.Kind + " " + loc.String()
	}
	o, err := Open(ctx, s)
	if err != nil {
		r.Open = err
		return r
	}
	defer o.Close()
	r.Name = o.Name()
	info, err := Describe(ctx, o)
	if err != nil {
		r.Read = err
		return r
	}
	r.Schema, r.Flows = info.Schema, info.Flows
	if o.Location.Kind == shared.KindBbolt {
		r.WriteProbed = true
		r.Write = o.Update(ctx, func(engine.Tx) error { return nil })
		if errors.Is(r.Write, context.Canceled) {
			r.Write = nil
		}
	}
	return r
}
