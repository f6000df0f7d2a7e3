package backend

import (
	"context"
	"errors"
	"fmt"

	"github.com/stratum-go/stratum/store/shared"
)

// CopyResult is what `stratum store copy` prints: the two stores' names and
// what was copied (its fields in the order of the keys' names, as the
// command has always printed them).
type CopyResult struct {
	CacheEntries int    `json:"cache_entries"`
	Events       int    `json:"events"`
	Flows        int    `json:"flows"`
	From         string `json:"from"`
	// GuardRecords are the keyed records copied (guarded resources, goals).
	GuardRecords int    `json:"guard_records"`
	To           string `json:"to"`
}

// CopyLocations parses the two stores of `stratum store copy` (--from and
// --to, Parse). Every error is a usage problem: a store that does not
// parse, or both naming the same store.
func CopyLocations(from, to string) (src, dst shared.Location, err error) {
	if src, err = shared.Parse(from); err != nil {
		return src, dst, fmt.Errorf("--from: %w", err)
	}
	if dst, err = shared.Parse(to); err != nil {
		return src, dst, fmt.Errorf("--to: %w", err)
	}
	if src.String() == dst.String() {
		return src, dst, errors.New("--from and --to are the same store")
	}
	return src, dst, nil
}

// CopyStores is the body of `stratum store copy`: it opens src and dst
// with the settings s (TLS and credentials for etcd, as every command
// has) and copies src into dst (Copy). A destination that is not
// empty without force is ErrNotEmpty; any other failure says how much was
// copied so far and that running again with force finishes the copy.
func CopyStores(ctx context.Context, src, dst shared.Location, s shared.Settings, force bool) (CopyResult, error) {
	from, err := OpenAt(ctx, src, s)
	if err != nil {
		return CopyResult{}, err
	}
	defer from.Close()
	to, err := OpenAt(ctx, dst, s)
	if err != nil {
		return CopyResult{}, err
	}
	defer to.Close()
	n, err := Copy(ctx, from, to, force)
	if errors.Is(err, ErrNotEmpty) {
		return CopyResult{}, err
	}
	if err != nil {
		return CopyResult{}, fmt.Errorf("%v (copied so far: %d flows, %d events, %d cache entries; run again with --force to finish)", err, n.Flows, n.Events, n.Cache)
	}
	return CopyResult{From: from.Name(), To: to.Name(), Flows: n.Flows, Events: n.Events, CacheEntries: n.Cache, GuardRecords: n.Records}, nil
}
