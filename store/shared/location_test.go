package shared_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine/config"
	"github.com/stratum-go/stratum/store/shared"
)

func TestParse(t *testing.T) {
	l, err := shared.Parse("etcd://10.0.0.1:2379,10.0.0.2:2379/team-a")
	if err != nil || l.Kind != shared.KindEtcd || len(l.Endpoints) != 2 || l.Prefix != "team-a" {
		t.Fatalf("Parse = %+v, %v", l, err)
	}
	if l, err := shared.Parse("/tmp/x.db"); err != nil || l.Kind != shared.KindBbolt || l.Path != "/tmp/x.db" {
		t.Fatalf("Parse(path) = %+v, %v", l, err)
	}
	for in, want := range map[string]string{
		"etcd://h:1":                 "a prefix is required",
		"etcd://h:1/":                "a prefix is required",
		"etcd://h/x":                 "want HOST:PORT",
		"etcd:///x":                  "no endpoint",
		"redis://h:1/x":              "unknown scheme",
		"etcd://bob:s3cret@h:2379/x": "credentials do not belong",
		"etcd://h:99999/x":           "bad port",
		// A query or fragment became part of the prefix, echoed in
		// store info, the TUI header, errors and every key (issue 23).
		"etcd://h:2379/team?password=s3cret":    "a query or fragment",
		"etcd://h:2379/team#s3cret":             "a query or fragment",
		"etcd://h:2379?password=s3cret":         "a query or fragment",
		"etcds://h:2379/team/?user=a&pw=s3cret": "a query or fragment",
		"etcd://h:2379/te\x00am":                "control character",
		"etcd://h:2379/te\nam":                  "control character",
	} {
		_, err := shared.Parse(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want %q", in, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Parse(%q) leaks the password: %v", in, err)
		}
	}
}

func TestSettingsPrecedence(t *testing.T) {
	cfg := config.Config{Store: "etcd://127.0.0.1:2379/from-config", StoreTimeout: 7 * time.Second, Etcd: config.Etcd{User: "cfg-user", Password: "cfg-pass"}}
	env := map[string]string{"STRATUM_STORE": "etcd://127.0.0.1:2379/from-env", "STRATUM_ETCD_PASSWORD": "env-pass"}
	s, err := shared.FromEnv("/home/x", cfg, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if s.Store != env["STRATUM_STORE"] || s.Timeout != 7*time.Second || s.Etcd.User != "cfg-user" || s.Etcd.Password != "env-pass" {
		t.Fatalf("settings = %+v", s)
	}
	s, _ = shared.FromEnv("/home/x", config.Config{}, func(string) string { return "" })
	if l, _ := s.Location(); l.Kind != shared.KindBbolt || l.Path != filepath.Join("/home/x", "stratum.db") {
		t.Fatalf("default location = %+v", l)
	}
	if _, err := shared.FromEnv("/h", config.Config{}, func(k string) string {
		return map[string]string{"STRATUM_STORE_TIMEOUT": "soon"}[k]
	}); err == nil {
		t.Fatal("a bad STRATUM_STORE_TIMEOUT was accepted")
	}
}
