package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/stratum-go/stratum/engine/state"
)

// SchemaVersion is the store schema this binary writes. It is stored raw
// (ASCII decimal) in meta/schema_version so any version can read it.
//
//	1  the first schema
//	2  summaries carry the runner lease (summary codec v2)
//	3  index entries are keys only (a transition rewrites one summary, not
//	   four); spec texts are stored once, in bucket specs, and flow states
//	   refer to them
//	4  summaries may carry the pending gate's review (summary codec v3);
//	   schema-3 summaries are read as they are, without it
//	5  a flow's records and trace are kept one key per entry in bucket
//	   flowlog, so a transition appends the new ones instead of re-encoding
//	   the whole state (flowlog.go)
//	6  a long flow's step outputs and attempts are kept one key per step
//	   in bucket flowlog, so a transition writes the steps it changed
//	   instead of re-encoding both maps (flowsteps.go)
//	7  pending gates with a deadline are indexed by it (bucket
//	   idx_deadline), so the sweep of expired deadlines every command
//	   opens with reads the gates due, not every pending one
const SchemaVersion = 7

// migration upgrades a store from schema version from to from+1. It runs
// inside the single write transaction of the upgrade, after the backup.
type migration struct {
	from  int
	name  string
	apply func(s *Store, btx *bolt.Tx) error
}

// schema is the target version and the ordered steps that reach it:
// steps[i] upgrades version i+1 to i+2.
type schema struct {
	version int
	steps   []migration
}

// summaryCodec is the summary encoding the schema writes (codec.go).
func (sc schema) summaryCodec() byte {
	switch {
	case sc.version < 2:
		return summaryCodecV1
	case sc.version < 4:
		return summaryCodecV2
	}
	return summaryCodecV3
}

// currentSchema is what Open uses. Add a step here (and bump SchemaVersion)
// for every change of buckets or encodings, never edit a released one.
var currentSchema = schema{version: SchemaVersion, steps: []migration{
	{from: 1, name: "summaries carry the runner lease", apply: addLeaseToSummaries},
	{from: 2, name: "index entries are keys only, specs stored once, events indexed in their bucket", apply: func(s *Store, btx *bolt.Tx) error {
		if err := emptyIndexValues(s, btx); err != nil {
			return err
		}
		if err := storeSpecsOnce(s, btx); err != nil {
			return err
		}
		return mergeFlowEvents(s, btx)
	}},
	{from: 3, name: "summaries of flows at a gate carry the gate's review", apply: addReviewToSummaries},
	{from: 4, name: "records and trace kept one key per entry (bucket flowlog)", apply: splitFlowLogs},
	{from: 5, name: "a long flow's step outputs and attempts kept one key per step (bucket flowlog)", apply: splitFlowSteps},
	{from: 6, name: "pending gates indexed by deadline (bucket idx_deadline)", apply: indexDeadlines},
}}

// fileState is what inspect found.
type fileState int

const (
	stateCurrent fileState = iota // a stratum store at our schema version
	stateEmpty                    // a bbolt file without buckets: initialise
	stateOlder                    // a stratum store at an older version: migrate
)

// prepare validates the file and brings it to s.schema.version. It looks
// with a read-only transaction first, so a file it rejects is never opened
// for writing.
func (s *Store) prepare(ctx context.Context) error {
	fi, err := os.Stat(s.path)
	switch {
	case err == nil && fi.IsDir():
		return fmt.Errorf("store %s: %w: is a directory", s.path, ErrInvalid)
	case err == nil && fi.Size() > 0:
		st := stateCurrent
		err := s.run(ctx, modeRead, func(btx *bolt.Tx) error {
			var ierr error
			st, _, ierr = s.inspect(btx)
			return ierr
		})
		if err != nil || st == stateCurrent {
			return err
		}
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("store %s: %w", s.path, err)
	}
	return s.run(ctx, modeCreate, func(btx *bolt.Tx) error {
		st, version, err := s.inspect(btx) // again, now under the exclusive lock
		if err != nil {
			return err
		}
		switch st {
		case stateEmpty:
			return s.initialise(btx)
		case stateOlder:
			return s.migrate(btx, version)
		}
		return nil
	})
}

// inspect classifies the file. Foreign, newer and corrupt files are errors.
func (s *Store) inspect(btx *bolt.Tx) (fileState, int, error) {
	var (
		st      fileState
		version int
	)
	err := s.guard(func() error {
		if fi, err := os.Stat(s.path); err == nil && btx.Size() > fi.Size() {
			return corruptError(s.path, fmt.Sprintf("truncated: the file is %d bytes but its pages need %d",
				fi.Size(), btx.Size()), nil)
		}
		var names []string
		_ = btx.ForEach(func(name []byte, _ *bolt.Bucket) error {
			names = append(names, strconv.Quote(string(name)))
			return nil
		})
		meta := btx.Bucket(bucketMeta)
		if meta == nil || string(meta.Get(keyFormat)) != string(formatMagic) {
			if len(names) == 0 {
				st = stateEmpty
				return nil
			}
			sort.Strings(names)
			if len(names) > 5 {
				names = append(names[:5], "…")
			}
			return &FileError{Path: s.path, Kind: ErrForeign,
				Detail: "a bbolt database with buckets " + strings.Join(names, ", "),
				Hint:   "it belongs to another program and was left untouched; point STRATUM_HOME elsewhere"}
		}
		raw := string(meta.Get(keySchemaVersion))
		v, err := strconv.Atoi(raw)
		if err != nil || v < 1 {
			return corruptError(s.path, fmt.Sprintf("meta/schema_version is %q", raw), err)
		}
		version = v
		switch {
		case v > s.schema.version:
			return &FileError{Path: s.path, Kind: ErrNewerSchema,
				Detail: fmt.Sprintf("schema version %d; this stratum knows up to %d", v, s.schema.version),
				Hint:   "upgrade stratum to use it; the file was left untouched"}
		case v < s.schema.version:
			st = stateOlder
			return nil
		}
		for _, b := range allBuckets {
			if btx.Bucket(b) == nil {
				return corruptError(s.path, fmt.Sprintf("bucket %q is missing", b), nil)
			}
		}
		return nil
	})
	return st, version, err
}

func (s *Store) initialise(btx *bolt.Tx) error {
	return s.guard(func() error {
		for _, name := range allBuckets {
			if _, err := btx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("create bucket %s: %w", name, err)
			}
		}
		meta := btx.Bucket(bucketMeta)
		now := []byte(s.now().Format(time.RFC3339))
		for _, kv := range [][2][]byte{
			{keyFormat, formatMagic},
			{keySchemaVersion, []byte(strconv.Itoa(s.schema.version))},
			{keyCreatedAt, now},
		} {
			if err := meta.Put(kv[0], kv[1]); err != nil {
				return err
			}
		}
		return nil
	})
}

// BackupPath is where a migration from schema version v backs the file up.
func BackupPath(storePath string, v int) string {
	return fmt.Sprintf("%s.bak-v%d", storePath, v)
}

// migrate backs the file up to <path>.bak-v<from>, then runs every step from
// version from to s.schema.version and the version bump in this one write
// transaction: either all of it commits or none.
func (s *Store) migrate(btx *bolt.Tx, from int) error {
	bak := BackupPath(s.path, from)
	if err := s.backup(btx, bak); err != nil {
		return fmt.Errorf("store %s: back up before migrating to %s: %w", s.path, bak, err)
	}
	for v := from; v < s.schema.version; v++ {
		if v-1 >= len(s.schema.steps) || s.schema.steps[v-1].from != v {
			return fmt.Errorf("store %s: no migration from schema version %d", s.path, v)
		}
		step := s.schema.steps[v-1]
		if err := runStep(s, btx, step); err != nil {
			return fmt.Errorf("store %s: migration %d→%d (%s) failed, file unchanged (backup %s): %w",
				s.path, v, v+1, step.name, bak, err)
		}
	}
	return s.guard(func() error {
		for _, name := range allBuckets {
			if _, err := btx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("create bucket %s: %w", name, err)
			}
		}
		meta := btx.Bucket(bucketMeta)
		if err := meta.Put(keySchemaVersion, []byte(strconv.Itoa(s.schema.version))); err != nil {
			return err
		}
		return meta.Put(keyUpgradedAt, []byte(s.now().Format(time.RFC3339)))
	})
}

// backup writes the committed database as seen by btx to path and fsyncs it.
// It must run before btx changes anything.
func (s *Store) backup(btx *bolt.Tx, path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, s.opts.FileMode)
	if err != nil {
		return err
	}
	if err := s.guard(func() error { _, err := btx.WriteTo(f); return err }); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// rebuildIndexes recomputes every summary with summarize (the stamps
// CreatedAt, UpdatedAt and Version are the state's, as Put stores them) and
// the idx_created, idx_status, idx_gates and idx_deadline buckets from the
// flow states, leaving the states untouched.
func (s *Store) rebuildIndexes(btx *bolt.Tx, summarize func(*state.FlowState) state.FlowSummary) error {
	for _, name := range [][]byte{bucketSummaries, bucketByCreated, bucketByStatus, bucketGates, bucketDeadlines} {
		if btx.Bucket(name) != nil {
			if err := btx.DeleteBucket(name); err != nil {
				return fmt.Errorf("drop %s: %w", name, err)
			}
		}
		if _, err := btx.CreateBucket(name); err != nil {
			return fmt.Errorf("create %s: %w", name, err)
		}
	}
	flows := btx.Bucket(bucketFlows)
	if flows == nil {
		return corruptError(s.path, "bucket \"flows\" is missing", nil)
	}
	sums := btx.Bucket(bucketSummaries)
	t := &tx{s: s, btx: btx}
	return flows.ForEach(func(k, v []byte) error {
		var st state.FlowState
		if err := json.Unmarshal(v, &st); err != nil {
			return corruptError(s.path, "cannot decode flow "+string(k), err)
		}
		if _, err := t.resolveSpec(&st); err != nil {
			return err
		}
		sum := summarize(&st)
		if sum.FlowID != st.FlowID || sum.Status != st.Status {
			return fmt.Errorf("summary of flow %q names flow %q, status %q", k, sum.FlowID, sum.Status)
		}
		sum.CreatedAt, sum.UpdatedAt, sum.Version = st.CreatedAt, st.UpdatedAt, st.Version
		enc, err := encodeSummary(&sum, s.schema.summaryCodec())
		if err != nil {
			return err
		}
		if err := sums.Put(bytes.Clone(k), enc); err != nil {
			return err
		}
		return t.index(&sum)
	})
}

// runStep runs one migration step, turning a panic into an error (the
// transaction is then rolled back by the caller).
func runStep(s *Store, btx *bolt.Tx, step migration) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panic: %v", v)
		}
	}()
	return step.apply(s, btx)
}
