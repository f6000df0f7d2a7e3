package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/stratum-go/stratum/store/etcdstore"
)

// ErrNotEtcd: a command that works on an etcd store only (store compact).
var ErrNotEtcd = errors.New("works on an etcd store only; a bbolt file reuses the pages gc frees")

// Compaction is what `stratum store compact` prints.
type Compaction struct {
	etcdstore.CompactResult
}

// Compact compacts the etcd cluster of st (etcdstore.Store.Compact); a bbolt
// store is refused with ErrNotEtcd.
func Compact(ctx context.Context, st *Opened, opt etcdstore.CompactOptions) (Compaction, error) {
	e, ok := st.Store.(*etcdstore.Store)
	if !ok {
		return Compaction{}, fmt.Errorf("%s: %w", st.Name(), ErrNotEtcd)
	}
	r, err := e.Compact(ctx, opt)
	return Compaction{r}, err
}

// WriteText prints what the compaction did and what is left to do.
func (c Compaction) WriteText(w io.Writer) error {
	var b strings.Builder
	if c.CompactedTo > 0 {
		fmt.Fprintf(&b, "compacted:      history up to revision %d (of %d)\n", c.CompactedTo, c.Before.Revision)
	} else {
		b.WriteString("compacted:      nothing (the history is shorter than what is kept)\n")
	}
	if c.Defragged {
		b.WriteString("defragmented:   every member, one at a time\n")
	}
	if c.Disarmed {
		b.WriteString("alarm:          NOSPACE disarmed: writes are accepted again\n")
	}
	writeSpace(&b, c.After)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeSpace prints each member's database and the advice it calls for.
func writeSpace(b *strings.Builder, sp etcdstore.Space) {
	for _, m := range sp.Members {
		if m.Err != "" {
			fmt.Fprintf(b, "database:       %s: %s\n", m.Endpoint, m.Err)
			continue
		}
		quota := "quota not reported"
		if m.Quota > 0 {
			quota = fmt.Sprintf("quota %s (%.0f %% used)", size(m.Quota), 100*float64(m.Size)/float64(m.Quota))
		}
		fmt.Fprintf(b, "database:       %s: %s file, %s in use, %s\n", m.Endpoint, size(m.Size), size(m.InUse), quota)
	}
	for _, a := range sp.Alarms {
		fmt.Fprintf(b, "alarm:          %s: writes are refused; run stratum store compact --defrag\n", a)
	}
	for _, m := range sp.Members {
		if m.NeedsDefrag() {
			fmt.Fprintf(b, "advice:         %s holds %s of free pages: stratum store compact --defrag returns them (each member blocks while it is defragmented)\n",
				m.Endpoint, size(m.Size-m.InUse))
			break
		}
	}
}

// size prints n bytes in KiB, MiB or GiB.
func size(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	default:
		return fmt.Sprintf("%.0f KiB", float64(n)/(1<<10))
	}
}
