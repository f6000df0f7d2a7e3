package backend

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/stratum-go/stratum/engine/guard"
	"github.com/stratum-go/stratum/store"
	"github.com/stratum-go/stratum/store/shared"
)

// ErrNotBbolt: a command that works on the bbolt file only (store check,
// gc --damaged) was given an etcd store.
var ErrNotBbolt = errors.New("works on the bbolt file store only")

// CheckReport is what `stratum store check` prints.
type CheckReport struct {
	Store string `json:"store"`
	OK    bool   `json:"ok"`
	// Pages are the problems bbolt's page-level check found; Indexes the
	// store's own (flows, summaries, indexes, specs, events), checked only
	// when the pages are sound.
	Pages   []string `json:"pages"`
	Indexes []string `json:"indexes"`
	// Guards are the guarded resources whose ledger chain is broken or
	// whose policy does not match its checksum (engine/guard.Verify).
	Guards []string `json:"guards"`
}

// Check runs the whole consistency check of the bbolt file (store.Store's
// Problems). err is a file that cannot be read at all (its *FileError).
func Check(ctx context.Context, o *Opened) (*CheckReport, error) {
	b, ok := o.Store.(shared.Bbolt)
	if !ok {
		return nil, fmt.Errorf("%s: %w", o.Name(), ErrNotBbolt)
	}
	pages, indexes, err := b.Problems(ctx)
	if err != nil {
		return nil, err
	}
	r := &CheckReport{Store: o.Name(), OK: len(pages)+len(indexes) == 0, Pages: messages(pages), Indexes: messages(indexes), Guards: []string{}}
	if len(pages) == 0 {
		g, err := guard.Verify(ctx, o.Store)
		if err != nil {
			return nil, err
		}
		if len(g) > 0 {
			r.Guards, r.OK = g, false
		}
	}
	return r, nil
}

func messages(errs []error) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Error()
	}
	return out
}

// WriteText prints the report as lines.
func (r *CheckReport) WriteText(w io.Writer) error {
	if r.OK {
		_, err := fmt.Fprintf(w, "%s: ok\n", r.Store)
		return err
	}
	fmt.Fprintf(w, "%s: damaged\n", r.Store)
	for _, p := range r.Pages {
		fmt.Fprintf(w, "page: %s\n", p)
	}
	for _, p := range r.Indexes {
		fmt.Fprintf(w, "record: %s\n", p)
	}
	for _, p := range r.Guards {
		fmt.Fprintf(w, "guard: %s\n", p)
	}
	if len(r.Guards) > 0 {
		fmt.Fprintln(w, "a guard's ledger is append-only and hash-chained: an entry that does not hash or link was changed outside stratum; `stratum guard history` names the first broken link")
	}
	if len(r.Pages) > 0 {
		_, err := fmt.Fprintln(w, "the pages are damaged: move the file aside (or restore a backup) and stratum will create a new store")
		return err
	}
	_, err := fmt.Fprintln(w, "the pages are sound: `stratum gc --damaged` quarantines undecodable flows; other index problems are repaired by a reindex")
	return err
}

// QuarantineDamaged moves the flows whose records cannot be decoded to the
// bbolt file's quarantine bucket (store.Store.QuarantineDamaged); none is
// an empty list, not nil.
func QuarantineDamaged(ctx context.Context, o *Opened) ([]store.Quarantined, error) {
	b, ok := o.Store.(shared.Bbolt)
	if !ok {
		return nil, fmt.Errorf("%s: %w", o.Name(), ErrNotBbolt)
	}
	q, err := b.QuarantineDamaged(ctx)
	if err == nil && q == nil {
		q = []store.Quarantined{}
	}
	return q, err
}
