package etcdstore

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/stratum-go/stratum/engine"
)

// SchemaVersion is the layout of the keys (see the package comment): 7
// keeps an event where its commit wrote it, p/, for good (no indexer moves
// it on to e/ and x/, which older schemas' events stay in), and reads the
// log after a cursor by revision from etcd's history; 6 keeps the task records of a flow that has more than a few one key per
// task (r/, tasks.go), so a transition writes the records that changed; 5
// keeps no summary in the entries of c/ and t/ (a listing reads s/), so a
// transition that keeps its status writes no index entry, and writes the
// events a commit appends to one flow in one key of the log; 4 has every
// appending commit record itself in meta/last_append (so the order of
// appends is known without comparing a shared key); 3 numbers events by
// the etcd revision of their commit (no shared counter); 2 puts every key
// below <prefix>/NUL, so no prefix's keys lie in another's ranges; 1 put
// them below <prefix>/ (migrated at Open, migrate.go; 2 to 6 become 7
// at Open without moving a key).
const SchemaVersion = 7

// format marks a prefix as ours.
const format = "stratum-etcd"

// DefaultTimeout bounds every call when Options.Timeout is zero.
const DefaultTimeout = 5 * time.Second

// maxAttempts bounds how often one Update is retried after losing a race.
const maxAttempts = 100

// Options configure Open.
type Options struct {
	// Endpoints are the cluster's client URLs or HOST:PORT.
	Endpoints []string
	// Prefix namespaces every key ("/team-a/"); it must not be empty or "/".
	Prefix string
	// Timeout bounds each call: Open, Update/View (retries included), one
	// read of Watch, GC's steps (0: DefaultTimeout).
	Timeout time.Duration
	// TLS is the client TLS configuration (nil: plain TCP).
	TLS *tls.Config
	// Username and Password authenticate to etcd (empty: no auth). They are
	// never part of an error.
	Username, Password string
	// Now is the store's clock (default time.Now).
	Now func() time.Time
}

// Store is engine.Store over etcd. Close it when done.
type Store struct {
	cli     *clientv3.Client
	pfx     string // "/team-a/", as configured
	root    string // what every key starts with: pfx‖NUL (keyRoot)
	eps     []string
	timeout time.Duration
	nowFn   func() time.Time
	tls     bool

	purging sync.Mutex
	// tasks are the task records this Store last read or wrote (tasks.go).
	tasks taskCache
	// leaseMu guards leases and serialises the commits that write lease
	// keys with the revocations that follow releases (lease.go).
	leaseMu sync.Mutex
	// leases are the etcd leases this Store keeps alive, by runner lease id.
	leases map[string]*heldLease
	// watchReads counts the log reads of every Watch (tests check that a
	// watcher is woken, not spinning).
	watchReads atomic.Int64

	// tokenBase and tokens make the pending event keys of each
	// transaction attempt unique (newToken).
	tokenBase uint64
	tokens    atomic.Uint32
	// prevMu guards prevs, the sequence number before each of this
	// Store's recent appending commits, by revision (order.go), and
	// prevRing, those revisions in the order they were noted.
	prevMu   sync.Mutex
	prevs    map[int64]uint64
	prevRing []int64
	prevNext int

	// feed is the tail of the event log one etcd watch delivers (feed.go);
	// closing ends when the Store is closed (stopClosing).
	feed        feed
	closing     context.Context
	stopClosing context.CancelFunc
}

var _ engine.Store = (*Store)(nil)

// Open connects to the cluster and checks the prefix: an empty prefix is
// initialised, one that holds another program's keys or a newer schema is
// refused. It fails within the timeout when the cluster does not answer.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if len(opts.Endpoints) == 0 {
		return nil, errors.New("etcd store: no endpoints")
	}
	pfx := opts.Prefix
	if strings.Trim(pfx, "/") == "" {
		return nil, fmt.Errorf("etcd store %s: a prefix is required (etcd://HOST:PORT/PREFIX), so stratum never writes at the root of a shared cluster", describe(opts.Endpoints, pfx))
	}
	if !strings.HasPrefix(pfx, "/") {
		pfx = "/" + pfx
	}
	if !strings.HasSuffix(pfx, "/") {
		pfx += "/"
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if strings.ContainsRune(pfx, 0) {
		return nil, fmt.Errorf("etcd store %s: the prefix has a NUL character", describe(opts.Endpoints, strings.ReplaceAll(pfx, "\x00", `\x00`)))
	}
	s := &Store{pfx: pfx, root: keyRoot(pfx), eps: opts.Endpoints, timeout: opts.Timeout, nowFn: opts.Now, tls: opts.TLS != nil, tokenBase: rand.Uint64()}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:            opts.Endpoints,
		DialTimeout:          opts.Timeout,
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: opts.Timeout,
		TLS:                  opts.TLS,
		Username:             opts.Username,
		Password:             opts.Password,
		Logger:               zap.NewNop(),
		RejectOldCluster:     false,
	})
	if err != nil {
		return nil, s.wrap("connect", err)
	}
	s.cli = cli
	s.closing, s.stopClosing = context.WithCancel(context.Background())
	if err := s.init(ctx); err != nil {
		s.stopClosing()
		cli.Close()
		return nil, err
	}
	return s, nil
}

// Close releases the connection.
func (s *Store) Close() error {
	s.stopClosing()
	return s.cli.Close()
}

// Endpoints are the cluster's endpoints as given.
func (s *Store) Endpoints() []string { return append([]string(nil), s.eps...) }

// Prefix is the key prefix, with its slashes ("/team-a/").
func (s *Store) Prefix() string { return s.pfx }

// String names the store as a URL without credentials: etcd://a:2379,b:2379/prefix.
func (s *Store) String() string { return describe(s.eps, s.pfx) }

// MaxEventsPerWrite is engine.EventLimiter: the events a commit appends
// to one flow one after the other share a key, but events of different
// flows, interleaved, take one key each, and a member accepts 128 operations per transaction unless started with
// a larger --max-txn-ops; 50 events leave room for the flow's own keys and
// the index entries whatever their flows.
func (s *Store) MaxEventsPerWrite() int { return 50 }

var _ engine.EventLimiter = (*Store)(nil)

func describe(eps []string, pfx string) string {
	hosts := make([]string, len(eps))
	for i, e := range eps {
		e = strings.TrimPrefix(strings.TrimPrefix(e, "http://"), "https://")
		hosts[i] = e
	}
	return "etcd://" + strings.Join(hosts, ",") + "/" + strings.Trim(pfx, "/")
}

func (s *Store) now() time.Time {
	if s.nowFn != nil {
		return s.nowFn().Round(0)
	}
	return time.Now().Round(0)
}

func (s *Store) key(parts ...string) string { return s.root + strings.Join(parts, "") }

// keyRoot is what every key of the prefix pfx ("/team/") starts with:
// pfx‖NUL. A prefix has no NUL, so no prefix's root starts another's:
// "/team/\x00" and "/team/d/\x00" are disjoint ranges, where schema 1's
// "/team/" held every key of "/team/d/".
func keyRoot(pfx string) string { return pfx + "\x00" }

// init checks (or writes) meta/format and meta/schema_version. A prefix
// that holds neither layout is initialised; one written in schema 1 is
// migrated first (migrate.go).
func (s *Store) init(ctx context.Context) error {
	c, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	fk, vk := s.key("meta/format"), s.key("meta/schema_version")
	oldFk := s.pfx + "meta/format"
	// A prefix already set up is read without writing (a cluster out of
	// space refuses any transaction that may write: the commands that
	// free space must still open it).
	get := []clientv3.Op{clientv3.OpGet(fk), clientv3.OpGet(vk), clientv3.OpGet(oldFk)}
	resp, err := s.cli.Txn(c).Then(get...).Commit()
	if err != nil {
		return s.wrap("open", err)
	}
	if len(resp.Responses[0].GetResponseRange().Kvs) == 0 {
		resp, err = s.cli.Txn(c).If(clientv3.Compare(clientv3.Version(fk), "=", 0), clientv3.Compare(clientv3.Version(oldFk), "=", 0)).
			Then(clientv3.OpPut(fk, format),
				clientv3.OpPut(vk, strconv.Itoa(SchemaVersion)),
				clientv3.OpPut(s.key("meta/seq"), "0"),
				clientv3.OpPut(s.key("meta/created_at"), s.now().UTC().Format(time.RFC3339))).
			Else(get...).Commit()
		if err != nil {
			return s.wrap("open", err)
		}
		if resp.Succeeded {
			return nil
		}
	}
	value := func(i int) (string, bool) {
		if kvs := resp.Responses[i].GetResponseRange().Kvs; len(kvs) > 0 {
			return string(kvs[0].Value), true
		}
		return "", false
	}
	f, ok := value(0)
	if !ok {
		if old, _ := value(2); old != format {
			return &Error{Store: s.String(), Msg: fmt.Sprintf("the prefix holds keys of another program (meta/format %q); choose another prefix", old)}
		}
		if err := s.migrate(ctx); err != nil {
			return err
		}
		return s.init(ctx)
	}
	v, _ := value(1)
	if f != format {
		return &Error{Store: s.String(), Msg: fmt.Sprintf("the prefix holds keys of another program (meta/format %q); choose another prefix", f)}
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return &Error{Store: s.String(), Msg: fmt.Sprintf("unreadable meta/schema_version %q; the prefix was left untouched", v)}
	}
	if n > SchemaVersion {
		return &Error{Store: s.String(), Msg: fmt.Sprintf("written by a newer stratum (schema %d, this one knows %d); upgrade stratum", n, SchemaVersion)}
	}
	if n >= 2 && n < SchemaVersion {
		// Schema 2 → 3 changes no key: the events already in e/ and x/
		// keep their sequence numbers, all below the revision-based ones,
		// and meta/seq becomes the high-water mark. 3 → 4 adds
		// meta/last_append, written by the next append. 4 → 5: the
		// summaries that index entries of schema 4 hold are no longer
		// read (a listing reads s/) and go when the entry does. 6 → 7:
		// the events in e/ and x/ stay there and are read as they are, and
		// those still in p/ (not indexed yet) are in the log's place for
		// good. Only the version moves, so an older stratum refuses the prefix from now
		// on (one of schema 3 would append without recording it, one of
		// schema 4 would read the empty entries as summaries, one of
		// schema 6 would read all of p/, the whole log now, as pending).
		if _, err := s.cli.Txn(c).If(clientv3.Compare(clientv3.Value(vk), "=", v)).
			Then(clientv3.OpPut(vk, strconv.Itoa(SchemaVersion))).Commit(); err != nil {
			return s.wrap("open", err)
		}
	}
	return nil
}

// SchemaVersionOf returns the schema version stored under the prefix.
func (s *Store) SchemaVersionOf(ctx context.Context) (int, error) {
	c, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	r, err := s.cli.Get(c, s.key("meta/schema_version"))
	if err != nil {
		return 0, s.wrap("read", err)
	}
	if len(r.Kvs) == 0 {
		return 0, nil
	}
	return strconv.Atoi(string(r.Kvs[0].Value))
}

// Update runs fn in one etcd transaction, retrying it when another writer
// changed what it read (see the package comment).
func (s *Store) Update(ctx context.Context, fn func(tx engine.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	for attempt := 1; ; attempt++ {
		t := newTx(s, c, true)
		if err := fn(t); err != nil {
			if t.etcdErr != nil && errors.Is(err, t.etcdErr) {
				return s.lostRaces("update", attempt-1, c, t.etcdErr)
			}
			return err
		}
		ok, err := t.commit()
		if err != nil {
			return s.lostRaces("update", attempt-1, c, err)
		}
		if ok {
			t.afterCommit(ctx)
			return nil
		}
		if attempt >= maxAttempts {
			return &Error{Store: s.String(), Msg: fmt.Sprintf("gave up after %d attempts that each lost a race with another writer; retry", attempt), Err: engine.ErrConflict}
		}
		// Jittered backoff: 1 ms growing to 50 ms.
		d := time.Duration(min(attempt, 50)) * time.Millisecond
		d = d/2 + time.Duration(rand.Int64N(int64(d)))
		select {
		case <-time.After(d):
		case <-c.Done():
			return s.lostRaces("update", attempt, c, c.Err())
		}
	}
}

// lostRaces is the error of an Update that failed with err after losing
// lost races: when the timeout ran out after at least one lost race, it is
// a conflict (errors.Is engine.ErrConflict: the cluster answered, other
// writers kept winning), not a cluster that does not answer.
func (s *Store) lostRaces(op string, lost int, c context.Context, err error) error {
	if lost > 0 && errors.Is(c.Err(), context.DeadlineExceeded) {
		return &Error{Store: s.String(), Msg: fmt.Sprintf("%d attempts each lost a race with another writer within the timeout; nothing was written, retry", lost), Err: engine.ErrConflict}
	}
	return s.wrap(op, err)
}

// View runs fn against one consistent snapshot.
func (s *Store) View(ctx context.Context, fn func(tx engine.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	t := newTx(s, c, false)
	if err := fn(t); err != nil {
		if t.etcdErr != nil && errors.Is(err, t.etcdErr) {
			return s.wrap("read", t.etcdErr)
		}
		return err
	}
	return nil
}

// CacheKeys lists the keys of the result cache (for stratum store copy and
// info; the port has no listing of the cache).
func (s *Store) CacheKeys(ctx context.Context) ([]string, error) {
	c, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	p := s.key("k/")
	r, err := s.cli.Get(c, p, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, s.wrap("read", err)
	}
	out := make([]string, len(r.Kvs))
	for i, k := range r.Kvs {
		out[i] = strings.TrimPrefix(string(k.Key), p)
	}
	return out, nil
}
