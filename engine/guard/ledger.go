package guard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/stratum-go/stratum/engine"
)

// resource is a registration with its ledger, read in one transaction.
type resource struct {
	key     string
	reg     *Registry
	entries []Entry
}

// load reads a resource (nil reg: not registered) and verifies its ledger
// chain: an entry whose digest does not match, or that does not link to
// the one before, is ledger_corrupt naming the first broken link.
func load(tx engine.Tx, id string) (*resource, error) {
	r := &resource{key: resourceKey(id)}
	raw, ok, err := tx.GuardGet(r.key)
	if err != nil || !ok {
		return r, err
	}
	var reg Registry
	if err := json.Unmarshal(raw, &reg); err != nil {
		return nil, errorf(ErrTampered, "the registration of %q is not readable: %v", id, err)
	}
	if reg.ResourceID != id {
		return nil, errorf(ErrResourceIDMismatch, "the registration stores resource_id %q but %q was asked for", reg.ResourceID, id)
	}
	r.reg = &reg
	raws, err := tx.GuardEntries(r.key)
	if err != nil {
		return nil, err
	}
	for _, b := range raws {
		var e Entry
		if err := json.Unmarshal(b, &e); err != nil {
			return nil, &CorruptError{Index: len(r.entries), Reason: "the entry is not readable: " + err.Error()}
		}
		r.entries = append(r.entries, e)
	}
	if ce := verifyChain(r.entries); ce != nil {
		return nil, ce
	}
	return r, nil
}

// CorruptError is a broken ledger chain: entry Index (0-based) does not
// hash to its digest or does not link to the entry before.
type CorruptError struct {
	Index  int
	Reason string
}

func (e *CorruptError) Error() string {
	return ErrLedgerCorrupt + ": " + e.message()
}

func (e *CorruptError) message() string {
	return "ledger chain broken at entry " + itoa(e.Index) + ": " + e.Reason
}

// Response is {status: "error", error_type: ledger_corrupt, message, first_broken}.
func (e *CorruptError) Response() engine.Response {
	return engine.Response{"status": "error", "error_type": ErrLedgerCorrupt, "message": e.message(), "first_broken": e.Index}
}

// verifyChain checks every entry's digest and link.
func verifyChain(entries []Entry) *CorruptError {
	prev := ""
	for i, e := range entries {
		if e.PrevDigest != prev {
			return &CorruptError{Index: i, Reason: "its prev_digest is not the digest of the entry before"}
		}
		d, err := e.digest()
		if err != nil || d != e.EntryDigest {
			return &CorruptError{Index: i, Reason: "its content does not hash to its entry_digest"}
		}
		prev = e.EntryDigest
	}
	return nil
}

// state is the resource's current state: the to state of its last applied
// transition or deviation, else its initial state.
func (r *resource) state() string {
	for i := len(r.entries) - 1; i >= 0; i-- {
		if o := r.entries[i].Outcome; o == outcomeApplied || o == outcomeDeviation {
			return r.entries[i].ToState
		}
	}
	return r.reg.Initial
}

// byIdempotencyKey is the entry recorded with key (nil: none).
func (r *resource) byIdempotencyKey(key string) *Entry {
	for i := range r.entries {
		if k := r.entries[i].IdempotencyKey; k != nil && *k == key {
			return &r.entries[i]
		}
	}
	return nil
}

// appendEntry links e to the ledger, digests it and appends it.
func (r *resource) appendEntry(tx engine.Tx, e Entry) (Entry, error) {
	if n := len(r.entries); n > 0 {
		e.PrevDigest = r.entries[n-1].EntryDigest
	}
	d, err := e.digest()
	if err != nil {
		return e, err
	}
	e.EntryDigest = d
	raw, err := json.Marshal(e)
	if err != nil {
		return e, err
	}
	if err := tx.GuardAppend(r.key, len(r.entries), raw); err != nil {
		return e, err
	}
	r.entries = append(r.entries, e)
	return e, nil
}

// asGuardError returns err's guard answer, or nil when err is not a guard
// error.
func asGuardError(err error) engine.Response {
	var ge *Error
	var ce *CorruptError
	switch {
	case errors.As(err, &ce):
		return ce.Response()
	case errors.As(err, &ge):
		return ge.Response()
	}
	return nil
}

func sortStrings(s []string) { sort.Strings(s) }

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// Verify checks every guarded resource of the store: its ledger's chain
// and its policy's checksum (`stratum store check`). It returns one line
// per damaged resource, naming the first broken link.
func Verify(ctx context.Context, st engine.Store) ([]string, error) {
	var problems []string
	err := st.View(ctx, func(tx engine.Tx) error {
		problems = nil
		keys, err := tx.GuardKeys()
		if err != nil {
			return err
		}
		for _, key := range keys {
			if strings.HasPrefix(key, "g") { // a goal (engine/goal), not a guard
				continue
			}
			raw, _, err := tx.GuardGet(key)
			if err != nil {
				return err
			}
			var reg Registry
			if err := json.Unmarshal(raw, &reg); err != nil {
				problems = append(problems, fmt.Sprintf("guard %s: the registration is not readable: %v", key, err))
				continue
			}
			r, err := load(tx, reg.ResourceID)
			var ce *CorruptError
			switch {
			case errors.As(err, &ce):
				problems = append(problems, fmt.Sprintf("guard %q: %s", reg.ResourceID, ce.message()))
				continue
			case err != nil:
				problems = append(problems, fmt.Sprintf("guard %q: %v", reg.ResourceID, err))
				continue
			}
			if sum, err := Checksum(r.reg.Graph, r.reg.EdgePredicates, r.reg.Terminal, r.reg.Stakes); err != nil || sum != r.reg.Checksum {
				problems = append(problems, fmt.Sprintf("guard %q: its policy does not match its checksum", reg.ResourceID))
			}
		}
		return nil
	})
	return problems, err
}
