// Package etcdtest runs real etcd members inside a test process
// (go.etcd.io/etcd/server/v3/embed) on loopback ports with temporary data
// directories, so the etcd store's tests need nothing installed; or, for
// benchmarks measured as a team runs etcd, each member in a process of its
// own (StartProcesses: the test binary started again, which serves the
// member from MemberMain). Only tests import it: the stratum binary does
// not link the etcd server.
package etcdtest

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// Cluster is a set of embedded etcd members.
type Cluster struct {
	mu      sync.Mutex
	members []*embed.Etcd
	names   []string
	// Endpoints are the members' client URLs (http://127.0.0.1:PORT, or
	// https:// with Options.TLS).
	Endpoints []string
	dir       string
	ownDir    bool
}

// TLS is a member's client TLS: its certificate and key, and when CA is
// set, client certificates signed by that CA are required.
type TLS struct {
	CertFile, KeyFile string
	CA                string
}

// Options configure StartWith and Launch.
type Options struct {
	// Members is the cluster's size (0: 1).
	Members int
	// Fsync makes the members fsync as a real deployment does (benchmarks).
	Fsync bool
	// TLS serves the client port over TLS (nil: plain TCP).
	TLS *TLS
	// AuthTokenTTL is the lifetime of etcd's simple tokens in seconds,
	// reset by each use (0: etcd's default, 300).
	AuthTokenTTL uint
	// MaxTxnOps is the members' --max-txn-ops (0: etcd's default, 128).
	MaxTxnOps uint
	// QuotaBackendBytes is the members' --quota-backend-bytes (0: etcd's
	// default, 2 GiB).
	QuotaBackendBytes int64
}

// freePort returns a loopback port nobody listens on right now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Start runs an n-member cluster and waits until it serves; it is stopped
// when the test ends. Members do not fsync (see StartFsync).
func Start(t testing.TB, n int) *Cluster { return StartWith(t, Options{Members: n}) }

// StartFsync is Start with members that fsync as a real deployment does
// (for benchmarks).
func StartFsync(t testing.TB, n int) *Cluster {
	return StartWith(t, Options{Members: n, Fsync: true})
}

// StartWith is Start with options; the cluster is stopped when the test ends.
func StartWith(t testing.TB, o Options) *Cluster {
	t.Helper()
	c, err := launch(t.TempDir(), false, o)
	if c != nil {
		t.Cleanup(c.StopAll)
	}
	if err != nil {
		t.Fatalf("etcdtest: %v", err)
	}
	return c
}

// Launch starts a cluster outside a test (a TestMain's, shared by a
// package's tests) in a temporary directory; Close stops it and removes
// the directory.
func Launch(o Options) (*Cluster, error) {
	dir, err := os.MkdirTemp("", "etcdtest-")
	if err != nil {
		return nil, err
	}
	c, err := launch(dir, true, o)
	if err != nil {
		if c != nil {
			c.Close()
		} else {
			os.RemoveAll(dir)
		}
		return nil, err
	}
	return c, nil
}

// Close stops every member and, for a Launch cluster, removes its data.
func (c *Cluster) Close() {
	c.StopAll()
	if c.ownDir {
		os.RemoveAll(c.dir)
	}
}

func launch(dir string, ownDir bool, o Options) (*Cluster, error) {
	scheme := "http"
	if o.TLS != nil {
		scheme = "https"
	}
	specs, err := memberSpecs(dir, o.Members, o.Fsync, scheme)
	if err != nil {
		return nil, err
	}
	n := len(specs)
	c := &Cluster{dir: dir, ownDir: ownDir}
	for _, s := range specs {
		c.names = append(c.names, s.Name)
		c.Endpoints = append(c.Endpoints, s.Client)
	}
	c.members = make([]*embed.Etcd, n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		cfg, err := memberConfig(specs[i])
		if err != nil {
			return c, err
		}
		if o.TLS != nil {
			cfg.ClientTLSInfo.CertFile, cfg.ClientTLSInfo.KeyFile = o.TLS.CertFile, o.TLS.KeyFile
			if o.TLS.CA != "" {
				cfg.ClientTLSInfo.TrustedCAFile, cfg.ClientTLSInfo.ClientCertAuth = o.TLS.CA, true
			}
		}
		if o.MaxTxnOps > 0 {
			cfg.MaxTxnOps = o.MaxTxnOps
		}
		if o.QuotaBackendBytes > 0 {
			cfg.QuotaBackendBytes = o.QuotaBackendBytes
		}
		if o.AuthTokenTTL > 0 {
			cfg.AuthTokenTTL = o.AuthTokenTTL
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, err := embed.StartEtcd(cfg)
			if err != nil {
				errs[i] = err
				return
			}
			select {
			case <-e.Server.ReadyNotify():
				c.mu.Lock()
				c.members[i] = e
				c.mu.Unlock()
			case <-time.After(30 * time.Second):
				e.Close()
				errs[i] = fmt.Errorf("member %s not ready in 30s", cfg.Name)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return c, err
		}
	}
	return c, nil
}

// Leader returns the index of the member that leads, or -1.
func (c *Cluster) Leader() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, m := range c.members {
		if m == nil {
			continue
		}
		if uint64(m.Server.Leader()) == uint64(m.Server.MemberID()) {
			return i
		}
	}
	return -1
}

// Stop stops member i (a crash as far as the others can tell).
func (c *Cluster) Stop(i int) {
	c.mu.Lock()
	m := c.members[i]
	c.members[i] = nil
	c.mu.Unlock()
	if m != nil {
		m.Close()
	}
}

// StopAll stops every member.
func (c *Cluster) StopAll() {
	for i := range c.members {
		c.Stop(i)
	}
}

// Logs returns the members' logs (for a failing test's message).
func (c *Cluster) Logs() string {
	var b strings.Builder
	for _, n := range c.names {
		data, _ := os.ReadFile(filepath.Join(c.dir, n+".log"))
		fmt.Fprintf(&b, "--- %s\n%s", n, data)
	}
	return b.String()
}

// URL is the store URL of the cluster with prefix: etcd://127.0.0.1:P1,…/prefix.
func (c *Cluster) URL(prefix string) string { return storeURL(c.Endpoints, prefix) }

// storeURL is the store URL of the members at endpoints with prefix.
func storeURL(endpoints []string, prefix string) string {
	hosts := make([]string, len(endpoints))
	for i, e := range endpoints {
		hosts[i] = strings.TrimPrefix(strings.TrimPrefix(e, "http://"), "https://")
	}
	return "etcd://" + strings.Join(hosts, ",") + "/" + prefix
}

// memberSpecs names the n members (at least one) of a cluster with its
// data in dir, each with a free loopback port for its peers and one for
// its clients (scheme http or https).
func memberSpecs(dir string, n int, fsync bool, scheme string) ([]memberSpec, error) {
	specs := make([]memberSpec, max(n, 1))
	var initial []string
	for i := range specs {
		pp, err := freePort()
		if err != nil {
			return nil, err
		}
		cp, err := freePort()
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("m%d", i)
		specs[i] = memberSpec{Name: name, Dir: filepath.Join(dir, name), Fsync: fsync,
			Peer: fmt.Sprintf("http://127.0.0.1:%d", pp), Client: fmt.Sprintf("%s://127.0.0.1:%d", scheme, cp)}
		initial = append(initial, name+"="+specs[i].Peer)
	}
	for i := range specs {
		specs[i].Initial = strings.Join(initial, ",")
	}
	return specs, nil
}

// memberConfig is the configuration of one test member, in a test's
// process or in one of its own: short election ticks, errors only in its
// log (the data directory's name with .log), and fsync only when asked —
// test data lives in a temporary directory, durability across a power cut
// is not what the tests check, and fsync dominates.
func memberConfig(s memberSpec) (*embed.Config, error) {
	peer, err := url.Parse(s.Peer)
	if err != nil {
		return nil, err
	}
	client, err := url.Parse(s.Client)
	if err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Name, cfg.Dir = s.Name, s.Dir
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*peer}, []url.URL{*peer}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*client}, []url.URL{*client}
	cfg.InitialCluster, cfg.InitialClusterToken = s.Initial, "stratum-test"
	cfg.TickMs, cfg.ElectionMs = 50, 500
	cfg.LogLevel = "error"
	cfg.LogOutputs = []string{s.Dir + ".log"}
	cfg.UnsafeNoFsync = !s.Fsync
	return cfg, nil
}

// Members is the number of members the cluster was started with.
func (c *Cluster) Members() int { return len(c.names) }

// Metric reads the named metrics of the member at endpoint i from its
// /metrics (the Prometheus text format); a metric absent is 0. The members
// of one process share their counters (etcd registers them once per
// process), so a counter is the sum over the members of this cluster, and
// of any other started in the same process.
func (c *Cluster) Metric(i int, names ...string) (map[string]float64, error) {
	cli := http.Client{Timeout: 10 * time.Second}
	resp, err := cli.Get(c.Endpoints[i] + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := make(map[string]float64, len(names))
	want := map[string]bool{}
	for _, n := range names {
		want[n], out[n] = true, 0
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok || !want[name] {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			return nil, fmt.Errorf("metric %s: %q: %v", name, val, err)
		}
		out[name] = v
	}
	return out, sc.Err()
}
