package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/config"
	"github.com/stratum-go/stratum/specs/exprlang"
	"github.com/stratum-go/stratum/store/backend"
	"github.com/stratum-go/stratum/store/etcdstore"
	"github.com/stratum-go/stratum/store/etcdstore/etcdtest"
	"github.com/stratum-go/stratum/store/shared"
)

// pki is a throw-away certificate authority and the certificates of one
// test, written as PEM files.
type pki struct {
	dir                                  string
	ca, serverCert, serverKey, cert, key string
	otherCA                              string
	caCert                               *x509.Certificate
	caKey                                *ecdsa.PrivateKey
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// newCA makes a self-signed CA and writes its certificate to path.
func newCA(t *testing.T, path, name string) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, path, "CERTIFICATE", der)
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// issue signs a leaf certificate for 127.0.0.1/localhost (server) or a
// client, and writes it and its key.
func (p *pki) issue(t *testing.T, certPath, keyPath, cn string, serial int64, usage x509.ExtKeyUsage) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, certPath, "CERTIFICATE", der)
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, keyPath, "EC PRIVATE KEY", kder)
}

func newPKI(t *testing.T) *pki {
	dir := t.TempDir()
	p := &pki{dir: dir, ca: filepath.Join(dir, "ca.pem"), serverCert: filepath.Join(dir, "server.pem"), serverKey: filepath.Join(dir, "server-key.pem"),
		cert: filepath.Join(dir, "client.pem"), key: filepath.Join(dir, "client-key.pem"), otherCA: filepath.Join(dir, "other-ca.pem")}
	p.caCert, p.caKey = newCA(t, p.ca, "stratum test CA")
	newCA(t, p.otherCA, "some other CA")
	p.issue(t, p.serverCert, p.serverKey, "etcd member", 2, x509.ExtKeyUsageServerAuth)
	p.issue(t, p.cert, p.key, "stratum client", 3, x509.ExtKeyUsageClientAuth)
	return p
}

// TestTeamModeTLSAndAuth: a member that serves clients over TLS, requires
// client certificates and has authentication enabled (root, and a user
// whose role may read and write only its team's prefix). stratum connects
// with the right settings; a wrong password, a token that expired and
// cannot be renewed, an unknown CA, a missing client certificate and a
// prefix the user may not touch each give the README's one-line error
// within the timeout; the password appears in no output, error or key.
func TestTeamModeTLSAndAuth(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd member")
	}
	p := newPKI(t)
	const ttl = 2 // seconds: etcd's simple tokens expire after this long unused
	c := etcdtest.StartWith(t, etcdtest.Options{TLS: &etcdtest.TLS{CertFile: p.serverCert, KeyFile: p.serverKey, CA: p.ca}, AuthTokenTTL: ttl})
	const rootPW, password = "r00t-Pw-x9", "alice-S3cret-q7"

	// The administrator's side: users, a role on /team/, auth on.
	cert, err := tls.LoadX509KeyPair(p.cert, p.key)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(p.caCert)
	tlsCfg := &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: roots, MinVersion: tls.VersionTLS12}
	admin, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints, TLS: tlsCfg, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, step := range []func() error{
		func() error { _, err := admin.UserAdd(ctx, "root", rootPW); return err },
		func() error { _, err := admin.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := admin.RoleAdd(ctx, "team"); return err },
		func() error {
			_, err := admin.RoleGrantPermission(ctx, "team", "/team/", clientv3.GetPrefixRangeEnd("/team/"), clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := admin.UserAdd(ctx, "alice", password); return err },
		func() error { _, err := admin.UserGrantRole(ctx, "alice", "team"); return err },
		func() error { _, err := admin.AuthEnable(ctx); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	admin.Close()
	root, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints, TLS: tlsCfg, DialTimeout: 5 * time.Second, Logger: zap.NewNop(), Username: "root", Password: rootPW})
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()

	bin := filepath.Join(binDir, "stratum")
	host := strings.TrimPrefix(c.Endpoints[0], "https://")
	const timeout = 2 * time.Second
	good := map[string]string{
		"STRATUM_STORE": "etcd://" + host + "/team", "STRATUM_STORE_TIMEOUT": timeout.String(),
		"STRATUM_ETCD_CA": p.ca, "STRATUM_ETCD_CERT": p.cert, "STRATUM_ETCD_KEY": p.key,
		"STRATUM_ETCD_USER": "alice", "STRATUM_ETCD_PASSWORD": password,
	}
	home := t.TempDir()
	stratum := func(change map[string]string, args ...string) (string, error, time.Duration) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = t.TempDir()
		cmd.Env = append(os.Environ(), "STRATUM_HOME="+home, "NO_COLOR=1")
		for k, v := range good {
			if nv, ok := change[k]; ok {
				v = nv
			}
			if v != "" {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
		}
		t0 := time.Now()
		out, err := cmd.CombinedOutput()
		d := time.Since(t0)
		if strings.Contains(string(out), password) || strings.Contains(string(out), rootPW) {
			t.Errorf("stratum %v printed a password:\n%s", args, out)
		}
		return string(out), err, d
	}

	// The right settings: a whole flow runs (with its gate) and store info reads it.
	hello := filepath.Join(repoRoot(t), "specs", "examples", "hello.stratum.yaml")
	if out, err, _ := stratum(nil, "run", hello, "--approve", "all"); err != nil {
		t.Fatalf("stratum run over TLS with auth: %v\n%s", err, out)
	}
	out, err, _ := stratum(nil, "store", "info", "--json")
	if err != nil || !strings.Contains(out, `"backend": "etcd"`) || !strings.Contains(out, `"flows": 1`) {
		t.Fatalf("store info: %v\n%s", err, out)
	}

	// Each failure: exit 1, one line naming the store and what to do, within the timeout.
	storeName := "etcd store etcd://" + host + "/"
	for _, f := range []struct {
		name   string
		change map[string]string
		want   string
	}{
		{"wrong password", map[string]string{"STRATUM_ETCD_PASSWORD": "not-" + password}, "authentication refused or expired (etcdserver: authentication failed, invalid user ID or password); check STRATUM_ETCD_USER / STRATUM_ETCD_PASSWORD (or etcd: user/password in config.yaml)"},
		{"unknown user", map[string]string{"STRATUM_ETCD_USER": "mallory"}, "authentication refused or expired"},
		{"unknown CA", map[string]string{"STRATUM_ETCD_CA": p.otherCA}, "no answer within 2s (members unreachable, TLS mismatch, or no quorum)"},
		{"no client certificate", map[string]string{"STRATUM_ETCD_CERT": "", "STRATUM_ETCD_KEY": ""}, "no answer within 2s (members unreachable, TLS mismatch, or no quorum)"},
		{"plain TCP to a TLS port", map[string]string{"STRATUM_ETCD_CA": "", "STRATUM_ETCD_CERT": "", "STRATUM_ETCD_KEY": ""}, "no answer within 2s"},
		{"prefix not granted", map[string]string{"STRATUM_STORE": "etcd://" + host + "/other"}, "permission denied; the etcd user needs read/write on the prefix /other/"},
	} {
		out, err, d := stratum(f.change, "query", "flows")
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Errorf("%s: exit %v, want 1\n%s", f.name, err, out)
			continue
		}
		line := strings.TrimSuffix(out, "\n")
		if strings.Contains(line, "\n") || !strings.Contains(line, storeName) || !strings.Contains(line, f.want) {
			t.Errorf("%s: want one line with %q and %q, got:\n%s", f.name, storeName, f.want, out)
		}
		// The bound: the timeout, plus the process's start and exit.
		if d > timeout+1500*time.Millisecond {
			t.Errorf("%s: took %v with a %v timeout", f.name, d, timeout)
		}
		t.Logf("%s (%v): %s", f.name, d.Round(time.Millisecond), line)
	}

	// A long-lived process (a TUI, an MCP server): its token expires when
	// unused for the TTL and is renewed with the password without the
	// caller noticing; once the password was changed, the renewal fails
	// with the authentication error, within the timeout.
	settings, err := shared.FromEnv(home, config.Config{}, func(k string) string { return good[k] })
	if err != nil {
		t.Fatal(err)
	}
	st, err := backend.Open(ctx, settings)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	svc := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: st}
	if _, err := svc.Plan(ctx, teamSpec, "main", nil, engine.PlanOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep((ttl + 1) * time.Second)
	if _, err := svc.Plan(ctx, teamSpec, "main", nil, engine.PlanOptions{}); err != nil {
		t.Fatalf("after the token expired (correct password): %v", err)
	}
	if _, err := root.UserChangePassword(ctx, "alice", "rotated-"+password); err != nil {
		t.Fatal(err)
	}
	time.Sleep((ttl + 1) * time.Second)
	t0 := time.Now()
	_, err = svc.Plan(ctx, teamSpec, "main", nil, engine.PlanOptions{})
	d := time.Since(t0)
	if err == nil || !errors.Is(err, etcdstore.ErrAuth) || !strings.Contains(err.Error(), "authentication refused or expired") ||
		strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), password) {
		t.Fatalf("after the password changed and the token expired: %v, want the one-line authentication error", err)
	}
	if d > timeout+500*time.Millisecond {
		t.Errorf("the expired authentication took %v to report (timeout %v)", d, timeout)
	}
	t.Logf("expired token, password changed (%v): %v", d.Round(time.Millisecond), err)

	// Nothing under any prefix holds a password.
	all, err := root.Get(ctx, "\x00", clientv3.WithFromKey())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, kv := range all.Kvs {
		if strings.HasPrefix(string(kv.Key), "/team/") {
			n++
		}
		for _, pw := range []string{password, rootPW} {
			if strings.Contains(string(kv.Key), pw) || strings.Contains(string(kv.Value), pw) {
				t.Errorf("key %q holds a password", kv.Key)
			}
		}
	}
	if n < 10 {
		t.Errorf("only %d keys under /team/: the flows were not written there", n)
	}
}
