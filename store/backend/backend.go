package backend

import (
	"context"

	"github.com/stratum-go/stratum/store"
	"github.com/stratum-go/stratum/store/etcdstore"
	"github.com/stratum-go/stratum/store/shared"
	_ "github.com/stratum-go/stratum/store/team" // the command opens etcd:// stores too
)

// Opened is an open store of either kind, where it is, and what the
// store commands read of it (Count, SchemaVersion).
type Opened struct{ *shared.Opened }

// SchemaVersion is the schema the store holds.
func (o *Opened) SchemaVersion(ctx context.Context) (int, error) {
	if e, ok := o.Store.(*etcdstore.Store); ok {
		return e.SchemaVersionOf(ctx)
	}
	return store.SchemaVersion, nil // Open migrated the file to it
}

// Open opens the store the settings select (shared.Open), team mode
// included.
func Open(ctx context.Context, s shared.Settings) (*Opened, error) {
	o, err := shared.Open(ctx, s)
	if err != nil {
		return nil, err
	}
	return &Opened{o}, nil
}

// OpenAt opens the store at loc with the credentials and timeout of s.
func OpenAt(ctx context.Context, loc shared.Location, s shared.Settings) (*Opened, error) {
	o, err := shared.OpenAt(ctx, loc, s)
	if err != nil {
		return nil, err
	}
	return &Opened{o}, nil
}
