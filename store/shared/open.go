package shared

import (
	"context"
	"fmt"
	"sync"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/store"
)

// Store is an open store of either kind.
type Store interface {
	engine.Store
	// Close releases the connection (nothing for bbolt: the file is
	// opened per transaction).
	Close() error
}

// Opened is an open store and where it is.
type Opened struct {
	Store
	Location Location
}

// Name is what a header shows: "bbolt PATH" or "etcd etcd://HOSTS/PREFIX".
func (o *Opened) Name() string { return o.Location.Kind + " " + o.Location.String() }

// MaxEventsPerWrite is engine.EventLimiter: the opened store's limit (0:
// none).
func (o *Opened) MaxEventsPerWrite() int {
	if l, ok := o.Store.(engine.EventLimiter); ok {
		return l.MaxEventsPerWrite()
	}
	return 0
}

// TeamOpener opens an etcd store at loc with the credentials, TLS files
// and timeout of s. Package store/team registers it.
type TeamOpener func(ctx context.Context, loc Location, s Settings) (Store, error)

var team struct {
	sync.Mutex
	open TeamOpener
}

// RegisterTeam makes etcd:// locations openable. It is called by package
// store/team when it is linked in; a second call replaces the first.
func RegisterTeam(open TeamOpener) {
	team.Lock()
	defer team.Unlock()
	team.open = open
}

func teamOpener() TeamOpener {
	team.Lock()
	defer team.Unlock()
	return team.open
}

// Bbolt is the Store of a bbolt file (Opened.Store of a KindBbolt
// location), for what works on the file only (store check, gc --damaged).
type Bbolt struct{ *store.Store }

// Close does nothing: the file is opened per transaction.
func (Bbolt) Close() error { return nil }

// Open opens the store the settings select.
func Open(ctx context.Context, s Settings) (*Opened, error) {
	loc, err := s.Location()
	if err != nil {
		return nil, err
	}
	return OpenAt(ctx, loc, s)
}

// OpenAt opens the store at loc with the credentials and timeout of s.
func OpenAt(ctx context.Context, loc Location, s Settings) (*Opened, error) {
	if loc.Kind == KindBbolt {
		st, err := store.Open(loc.Path, store.Options{Now: s.Now, ParseSpec: s.ParseSpec})
		if err != nil {
			return nil, err
		}
		return &Opened{Store: Bbolt{st}, Location: loc}, nil
	}
	open := teamOpener()
	if open == nil {
		return nil, fmt.Errorf("store %s: team mode (etcd) is not linked into this program; add the import _ \"github.com/stratum-go/stratum/store/team\" (the stratum command has it)", loc)
	}
	st, err := open(ctx, loc, s)
	if err != nil {
		return nil, err
	}
	return &Opened{Store: st, Location: loc}, nil
}
