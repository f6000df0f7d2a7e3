package backend

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/stratum-go/stratum/store/etcdstore"
	"github.com/stratum-go/stratum/store/shared"
)

// Info is what `stratum store info` prints: the backend, where it is, its
// schema version and what it holds. It never carries credentials.
type Info struct {
	Backend   string   `json:"backend"`
	Path      string   `json:"path,omitempty"`
	Endpoints []string `json:"endpoints,omitempty"`
	Prefix    string   `json:"prefix,omitempty"`
	Schema    int      `json:"schema_version"`
	Counts
	// Space is the etcd cluster's database size, quota and alarms (nil:
	// a bbolt file).
	Space *etcdstore.Space `json:"space,omitempty"`
}

// Describe reads the Info of an opened store.
func Describe(ctx context.Context, st *Opened) (Info, error) {
	info := Info{Backend: st.Location.Kind}
	if st.Location.Kind == shared.KindBbolt {
		info.Path = st.Location.Path
	} else {
		info.Endpoints, info.Prefix = st.Location.Endpoints, st.Location.Prefix
	}
	var err error
	if info.Schema, err = st.SchemaVersion(ctx); err != nil {
		return info, err
	}
	if info.Counts, err = st.Count(ctx); err != nil {
		return info, err
	}
	if e, ok := st.Store.(*etcdstore.Store); ok {
		sp, err := e.Space(ctx)
		if err != nil {
			return info, err
		}
		info.Space = &sp
	}
	return info, nil
}

// WriteText prints the info for a person, one aligned line per field.
func (info Info) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "backend:        %s\n", info.Backend)
	if info.Path != "" {
		fmt.Fprintf(&b, "path:           %s\n", info.Path)
	} else {
		fmt.Fprintf(&b, "endpoints:      %s\nprefix:         %s\n", strings.Join(info.Endpoints, ","), info.Prefix)
	}
	fmt.Fprintf(&b, "schema version: %d\nflows:          %d", info.Schema, info.Flows)
	for _, s := range slices.Sorted(maps.Keys(info.ByStatus)) {
		fmt.Fprintf(&b, " · %s %d", s, info.ByStatus[s])
	}
	fmt.Fprintf(&b, "\npending gates:  %d\nevents:         %d (last sequence %d)\ncache entries:  %d\nguard records:  %d\n",
		info.Gates, info.Events, info.LastSeq, info.Cache, info.Records)
	if info.Space != nil {
		writeSpace(&b, *info.Space)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
