// Package team is stratum's team mode for a Go program: linked in, it lets
// store/shared open etcd:// stores (an etcd cluster shared by many
// machines, store/TEAM.md), so STRATUM_STORE=etcd://HOST:PORT/PREFIX or the
// config's store: works in the program as in the stratum command. It is a
// separate package so that a program on the default bbolt file links no
// etcd client, gRPC or zap. Enable it with one import:
//
//	import _ "github.com/stratum-go/stratum/store/team"
//
// The stratum command links it. The settings it reads (TLS files,
// credentials, STRATUM_ETCD_INSECURE) are those of store/shared.Settings.
package team

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"

	"github.com/stratum-go/stratum/engine/config"
	"github.com/stratum-go/stratum/store/etcdstore"
	"github.com/stratum-go/stratum/store/shared"
)

func init() { shared.RegisterTeam(openEtcd) }

// openEtcd opens the etcd store at loc with the credentials, TLS files and
// timeout of s. Plain TCP to an endpoint that is not loopback is refused
// unless s.Etcd.Insecure: etcd credentials and every flow would cross the
// network in clear.
func openEtcd(ctx context.Context, loc shared.Location, s shared.Settings) (shared.Store, error) {
	tlsCfg, err := tlsConfig(loc, s.Etcd)
	if err != nil {
		return nil, err
	}
	if tlsCfg == nil && !s.Etcd.Insecure {
		for _, ep := range loc.Endpoints {
			if !loopback(ep) {
				return nil, fmt.Errorf("etcd store %s: %s is not a loopback address and no TLS is configured; set STRATUM_ETCD_CA (and STRATUM_ETCD_CERT/STRATUM_ETCD_KEY for client certificates) or use etcds://, or set STRATUM_ETCD_INSECURE=1 to send flows and credentials in clear", loc, ep)
			}
		}
	}
	eps := make([]string, len(loc.Endpoints))
	for i, ep := range loc.Endpoints {
		if tlsCfg != nil {
			eps[i] = "https://" + ep
		} else {
			eps[i] = "http://" + ep
		}
	}
	st, err := etcdstore.Open(ctx, etcdstore.Options{Endpoints: eps, Prefix: "/" + loc.Prefix + "/", Timeout: s.Timeout,
		TLS: tlsCfg, Username: s.Etcd.User, Password: s.Etcd.Password, Now: s.Now})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// loopback reports whether HOST:PORT names this machine.
func loopback(ep string) bool {
	host, _, err := net.SplitHostPort(ep)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func tlsConfig(loc shared.Location, e config.Etcd) (*tls.Config, error) {
	if !loc.TLS && e.CertFile == "" && e.KeyFile == "" && e.CAFile == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if (e.CertFile == "") != (e.KeyFile == "") {
		return nil, fmt.Errorf("etcd store %s: a client certificate needs both STRATUM_ETCD_CERT and STRATUM_ETCD_KEY (etcd: cert and key)", loc)
	}
	if e.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(e.CertFile, e.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("etcd store %s: client certificate %s: %v", loc, e.CertFile, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if e.CAFile != "" {
		pem, err := os.ReadFile(e.CAFile)
		if err != nil {
			return nil, fmt.Errorf("etcd store %s: CA: %v", loc, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("etcd store %s: CA %s holds no PEM certificate", loc, e.CAFile)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}
