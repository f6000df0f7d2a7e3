package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The cluster's space: what etcd keeps, what stratum needs of it, and what
// happens at the quota.
//
// etcd keeps every revision of every key until the cluster is compacted,
// and compaction frees pages inside each member's database file without
// shrinking it: only a defragmentation returns them, one member at a time
// (it blocks the member while it runs). When a member's file reaches the
// quota (--quota-backend-bytes, 2 GiB by default), etcd raises the NOSPACE
// alarm and refuses every write of the cluster until an operator frees
// space and disarms the alarm. Stratum reads no revision older than its
// transactions' snapshots (a second or so) and its feeds, which start
// again from the current revision when theirs was compacted: everything
// but the last few revisions is history stratum no longer needs.

// ErrNoSpace is wrapped by the errors of a cluster that refuses writes
// because a member's database reached its quota (etcd's NOSPACE alarm).
var ErrNoSpace = errors.New("etcd cluster out of space")

// noSpaceMsg is the one line every command prints when etcd refuses a write
// for lack of space.
const noSpaceMsg = "the etcd cluster is out of space (NOSPACE alarm: a member's database reached its quota, --quota-backend-bytes); nothing was written. " +
	"Free space with stratum gc, then stratum store compact --defrag (it compacts, defragments each member and disarms the alarm), or raise the quota"

// MemberSpace is one member's database, as it reports it.
type MemberSpace struct {
	Endpoint string `json:"endpoint"`
	// Size is the database file's size; InUse the part of it holding
	// data (the rest is free pages that only a defragmentation returns);
	// Quota the member's --quota-backend-bytes (0: not reported, etcd
	// before 3.6).
	Size  int64 `json:"db_size"`
	InUse int64 `json:"db_in_use"`
	Quota int64 `json:"quota,omitempty"`
	// Err is why the member did not answer ("" when it did).
	Err string `json:"error,omitempty"`
}

// Space is the cluster's space: each member's database, the alarms raised,
// and the revisions (the current one and, for a compaction, the one it
// compacted to).
type Space struct {
	Members  []MemberSpace `json:"members"`
	Alarms   []string      `json:"alarms,omitempty"`
	Revision int64         `json:"revision"`
}

// Largest is the member whose database is fullest (relative to its quota
// when known).
func (sp Space) Largest() MemberSpace {
	var best MemberSpace
	for _, m := range sp.Members {
		if m.Err == "" && (best.Endpoint == "" || fill(m) > fill(best)) {
			best = m
		}
	}
	return best
}

func fill(m MemberSpace) float64 {
	if m.Quota > 0 {
		return float64(m.Size) / float64(m.Quota)
	}
	return float64(m.Size)
}

// NeedsDefrag reports whether a member's file holds at least as much free
// space as data and more than 64 MiB of it: a defragmentation returns it.
func (m MemberSpace) NeedsDefrag() bool {
	free := m.Size - m.InUse
	return m.Err == "" && free > 64<<20 && free >= m.InUse
}

// Space asks every member for its database's size, in use and quota, and
// the cluster for its alarms.
func (s *Store) Space(ctx context.Context) (Space, error) {
	var sp Space
	for _, ep := range s.eps {
		c, cancel := context.WithTimeout(ctx, s.timeout)
		r, err := s.cli.Status(c, ep)
		cancel()
		m := MemberSpace{Endpoint: ep}
		if err != nil {
			m.Err = s.wrap("status", err).Error()
		} else {
			m.Size, m.InUse, m.Quota = r.DbSize, r.DbSizeInUse, r.DbSizeQuota
			sp.Revision = max(sp.Revision, r.Header.Revision)
		}
		sp.Members = append(sp.Members, m)
	}
	c, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	al, err := s.cli.AlarmList(c)
	if err != nil {
		return sp, s.wrap("alarms", err)
	}
	for _, a := range al.Alarms {
		sp.Alarms = append(sp.Alarms, fmt.Sprintf("%s on member %x", a.Alarm, a.MemberID))
	}
	return sp, nil
}

// CompactOptions configure Compact.
type CompactOptions struct {
	// Keep is how many of the latest revisions to keep (0: 1000, a margin
	// for the snapshots of transactions under way).
	Keep int64
	// Defrag defragments each member after the compaction, one at a time,
	// and then disarms a NOSPACE alarm if every member is below its quota.
	Defrag bool
}

// CompactResult is what Compact did.
type CompactResult struct {
	// CompactedTo is the revision the cluster was compacted to (0: there
	// was nothing to compact).
	CompactedTo int64 `json:"compacted_to"`
	Before      Space `json:"before"`
	After       Space `json:"after"`
	Defragged   bool  `json:"defragmented"`
	Disarmed    bool  `json:"disarmed,omitempty"`
}

// Compact compacts the cluster's history up to the current revision minus
// opt.Keep: etcd then drops every older revision of every key, of every
// prefix and program sharing the cluster (compaction is the cluster's, not
// a prefix's). With opt.Defrag it defragments the members one at a time
// and disarms NOSPACE once there is room again.
func (s *Store) Compact(ctx context.Context, opt CompactOptions) (CompactResult, error) {
	if opt.Keep <= 0 {
		opt.Keep = 1000
	}
	var res CompactResult
	var err error
	if res.Before, err = s.Space(ctx); err != nil {
		return res, err
	}
	c, cancel := context.WithTimeout(ctx, s.timeout)
	r, err := s.cli.Get(c, s.key("meta/format"), clientv3.WithKeysOnly())
	cancel()
	if err != nil {
		return res, s.wrap("compact", err)
	}
	if to := r.Header.Revision - opt.Keep; to > 0 {
		c, cancel := context.WithTimeout(ctx, 10*s.timeout)
		_, err := s.cli.Compact(c, to, clientv3.WithCompactPhysical())
		cancel()
		switch {
		case err == nil:
			res.CompactedTo = to
		case strings.Contains(err.Error(), "required revision has been compacted"):
			// Compacted further already: nothing to do.
		default:
			return res, s.wrap("compact", err)
		}
	}
	if opt.Defrag {
		for _, ep := range s.eps {
			c, cancel := context.WithTimeout(ctx, 60*s.timeout)
			_, err := s.cli.Defragment(c, ep)
			cancel()
			if err != nil {
				return res, s.wrap("defragment "+ep, err)
			}
		}
		res.Defragged = true
	}
	if res.After, err = s.Space(ctx); err != nil {
		return res, err
	}
	if opt.Defrag {
		if res.Disarmed, err = s.disarmNoSpace(ctx, res.After); err != nil {
			return res, err
		}
		if res.Disarmed {
			res.After, err = s.Space(ctx)
		}
	}
	return res, err
}

// disarmNoSpace disarms the NOSPACE alarms when every member's database is
// below 90 % of its quota (else etcd would raise it again at once).
func (s *Store) disarmNoSpace(ctx context.Context, sp Space) (bool, error) {
	if len(sp.Alarms) == 0 {
		return false, nil
	}
	for _, m := range sp.Members {
		if m.Err != "" || (m.Quota > 0 && m.Size*10 >= m.Quota*9) {
			return false, nil
		}
	}
	c, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	al, err := s.cli.AlarmList(c)
	if err != nil {
		return false, s.wrap("alarms", err)
	}
	done := false
	for _, a := range al.Alarms {
		if a.Alarm != etcdserverpb.AlarmType_NOSPACE {
			continue
		}
		if _, err := s.cli.AlarmDisarm(c, (*clientv3.AlarmMember)(a)); err != nil {
			return done, s.wrap("disarm", err)
		}
		done = true
	}
	return done, nil
}
