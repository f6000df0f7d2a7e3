package shared

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/stratum-go/stratum/engine/config"
	"github.com/stratum-go/stratum/specs"
	"github.com/stratum-go/stratum/store"
)

// Kinds of store.
const (
	KindBbolt = "bbolt"
	KindEtcd  = "etcd"
)

// Location is a parsed store setting.
type Location struct {
	Kind      string   // KindBbolt or KindEtcd
	Path      string   // bbolt: the file
	Endpoints []string // etcd: HOST:PORT
	Prefix    string   // etcd: the key prefix ("team-a")
	TLS       bool     // etcds://
}

// String is the location without credentials: the path, or etcd://HOSTS/PREFIX.
func (l Location) String() string {
	if l.Kind == KindBbolt {
		return l.Path
	}
	scheme := "etcd"
	if l.TLS {
		scheme = "etcds"
	}
	return scheme + "://" + strings.Join(l.Endpoints, ",") + "/" + l.Prefix
}

// Parse reads a store setting: etcd://HOST:PORT[,HOST:PORT…]/PREFIX (etcds://
// for TLS with the system's CAs), else a bbolt file path.
func Parse(s string) (Location, error) {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		if s == "" {
			return Location{}, errors.New("empty store setting")
		}
		return Location{Kind: KindBbolt, Path: s}, nil
	}
	if scheme != "etcd" && scheme != "etcds" {
		return Location{}, fmt.Errorf("store %q: unknown scheme %s:// (want a file path, etcd:// or etcds://)", redactURL(s), scheme)
	}
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		// A query or a fragment (?password=…) would become part of the
		// prefix, and with it of every key, error and header: refused like
		// credentials, without echoing it.
		return Location{}, fmt.Errorf("store %s: a query or fragment (%q…) does not belong in the URL; the prefix is the path, and credentials go in STRATUM_ETCD_USER and STRATUM_ETCD_PASSWORD (or etcd: user/password in config.yaml)", redactURL(scheme+"://"+rest[:i]), rest[i:i+1])
	}
	hosts, prefix, _ := strings.Cut(rest, "/")
	if strings.Contains(hosts, "@") {
		return Location{}, fmt.Errorf("store %s: credentials do not belong in the URL; set STRATUM_ETCD_USER and STRATUM_ETCD_PASSWORD (or etcd: user/password in config.yaml)", redactURL(s))
	}
	prefix = strings.Trim(prefix, "/")
	if i := strings.IndexFunc(prefix, func(r rune) bool { return r < 0x20 || r == 0x7f }); i >= 0 {
		return Location{}, fmt.Errorf("store %s://%s/…: the prefix has a control character (%q); use letters, digits and / - _ .", scheme, hosts, prefix[i:i+1])
	}
	if prefix == "" {
		return Location{}, fmt.Errorf("store %s: a prefix is required (%s://HOST:PORT/PREFIX), so stratum never writes at the root of a shared cluster", s, scheme)
	}
	l := Location{Kind: KindEtcd, Prefix: prefix, TLS: scheme == "etcds"}
	for _, h := range strings.Split(hosts, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		host, port, err := net.SplitHostPort(h)
		if err != nil || host == "" {
			return Location{}, fmt.Errorf("store %s: endpoint %q: want HOST:PORT", s, h)
		}
		if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 {
			return Location{}, fmt.Errorf("store %s: endpoint %q: bad port", s, h)
		}
		l.Endpoints = append(l.Endpoints, h)
	}
	if len(l.Endpoints) == 0 {
		return Location{}, fmt.Errorf("store %s: no endpoint (%s://HOST:PORT[,HOST:PORT…]/PREFIX)", s, scheme)
	}
	return l, nil
}

// redactURL drops anything between :// and @ (user:password).
func redactURL(s string) string {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return s
	}
	if i := strings.LastIndex(strings.SplitN(rest, "/", 2)[0], "@"); i >= 0 {
		rest = "…@" + rest[i+1:]
	}
	return scheme + "://" + rest
}

// Settings are everything Open needs.
type Settings struct {
	// Store is the setting (empty: the default file in Home).
	Store   string
	Home    string
	Timeout time.Duration
	Etcd    config.Etcd
	// Now is the store's clock (nil: time.Now): GC's cutoff and the time
	// of events appended without one (the stamps of flows are the
	// writer's).
	Now func() time.Time
	// ParseSpec parses a stored spec where the bbolt store needs one
	// (store.Options.ParseSpec; the stratum command sets
	// exprlang.ParseSpec). A Go program leaves it nil and links no spec
	// parser.
	ParseSpec func(file string, src []byte) (*specs.Spec, specs.Diagnostics)
}

// FromEnv merges the environment (getenv, os.Getenv when nil) over cfg.
func FromEnv(home string, cfg config.Config, getenv func(string) string) (Settings, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	s := Settings{Store: cfg.Store, Home: home, Timeout: cfg.StoreTimeout, Etcd: cfg.Etcd}
	if v := getenv("STRATUM_STORE"); v != "" {
		s.Store = v
	}
	if v := getenv("STRATUM_STORE_TIMEOUT"); v != "" {
		d, err := config.ParseTimeout(v)
		if err != nil {
			return s, fmt.Errorf("STRATUM_STORE_TIMEOUT: %v", err)
		}
		s.Timeout = d
	}
	for _, e := range []struct {
		name string
		into *string
	}{{"STRATUM_ETCD_CERT", &s.Etcd.CertFile}, {"STRATUM_ETCD_KEY", &s.Etcd.KeyFile}, {"STRATUM_ETCD_CA", &s.Etcd.CAFile},
		{"STRATUM_ETCD_USER", &s.Etcd.User}, {"STRATUM_ETCD_PASSWORD", &s.Etcd.Password}} {
		if v := getenv(e.name); v != "" {
			*e.into = v
		}
	}
	if v := getenv("STRATUM_ETCD_INSECURE"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return s, fmt.Errorf("STRATUM_ETCD_INSECURE=%q: want 1/true or 0/false", v)
		}
		s.Etcd.Insecure = b
	}
	return s, nil
}

// Location returns the parsed store setting (the default file when unset).
func (s Settings) Location() (Location, error) {
	if s.Store == "" {
		return Location{Kind: KindBbolt, Path: filepath.Join(s.Home, store.FileName)}, nil
	}
	return Parse(s.Store)
}
