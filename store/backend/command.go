package backend

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/stratum-go/stratum/store/etcdstore"
	"github.com/stratum-go/stratum/store/shared"
)

// The command bodies here answer as the CLI's other commands do: (report
// or answer, exit status, error), the error being the message the command
// prints with its status.
const (
	statusFailure = 1 // a store failure, or a check that found problems
	statusUsage   = 2 // a usage problem: a bad flag, the wrong kind of store
)

// Report is a store command's report: the command prints it as JSON
// (--json) or with WriteText.
type Report interface {
	WriteText(w io.Writer) error
}

// CompactCommand is `stratum store compact` on the opened store (Compact):
// a negative --keep or a bbolt store is a usage problem.
func CompactCommand(ctx context.Context, st *Opened, opt etcdstore.CompactOptions) (Report, int, error) {
	if opt.Keep < 0 {
		return nil, statusUsage, fmt.Errorf("store compact: --keep %d: a number of revisions, 0 or more", opt.Keep)
	}
	r, err := Compact(ctx, st, opt)
	if errors.Is(err, ErrNotEtcd) {
		return nil, statusUsage, fmt.Errorf("store compact: %v", err)
	} else if err != nil {
		return nil, statusFailure, err
	}
	return r, 0, nil
}

// CheckCommand is `stratum store check` on the opened store (Check): exit
// 1 with the report when it found a problem; an etcd store is a usage
// problem.
func CheckCommand(ctx context.Context, st *Opened) (Report, int, error) {
	r, err := Check(ctx, st)
	if errors.Is(err, ErrNotBbolt) {
		return nil, statusUsage, fmt.Errorf("store check: %v", err)
	} else if err != nil {
		return nil, statusFailure, err
	}
	if !r.OK {
		return r, statusFailure, nil
	}
	return r, 0, nil
}

// InfoCommand is `stratum store info` on the opened store (Describe).
func InfoCommand(ctx context.Context, st *Opened) (Report, int, error) {
	info, err := Describe(ctx, st)
	if err != nil {
		return nil, statusFailure, err
	}
	return info, 0, nil
}

// CopyCommand is `stratum store copy --from FROM --to TO`: the stores
// parsed (CopyLocations: a usage problem) and copied with the settings s
// (CopyStores); the answer is the CopyResult.
func CopyCommand(ctx context.Context, from, to string, s shared.Settings, force bool) (answer any, status int, _ error) {
	src, dst, err := CopyLocations(from, to)
	if err != nil {
		return nil, statusUsage, err
	}
	n, err := CopyStores(ctx, src, dst, s, force)
	if err != nil {
		return nil, statusFailure, err
	}
	return n, 0, nil
}

// GCDamagedCommand is `stratum gc --damaged` on the opened store
// (QuarantineDamaged): the answer is {"quarantined": [...]}; an etcd
// store is a usage problem.
func GCDamagedCommand(ctx context.Context, st *Opened) (answer any, status int, _ error) {
	q, err := QuarantineDamaged(ctx, st)
	if errors.Is(err, ErrNotBbolt) {
		return nil, statusUsage, fmt.Errorf("gc --damaged: %v", err)
	} else if err != nil {
		return nil, statusFailure, err
	}
	return map[string]any{"quarantined": q}, 0, nil
}
