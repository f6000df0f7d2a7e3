package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadLayers(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	t.Setenv("STRATUM_HOME", home)
	write(t, filepath.Join(home, FileName), `default_model: openai/gpt-4o-mini
base_urls: {ollama: "http://a:11434/v1", openai: "http://o/v1"}
agents:
  claude: [claude, -p, --model, opus]
  x: "run-x"
keys:
  approve: A
  kill: [X, ctrl+x]
`)
	write(t, filepath.Join(project, ".stratum", FileName), `default_model: ollama/llama3.2
base_urls: {ollama: "http://b:11434/v1"}
agents:
  x: {command: [x, --json]}
keys:
  approve: [Y]
`)
	cfg, err := Load(project)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DefaultModel != "ollama/llama3.2" || cfg.BaseURLs["ollama"] != "http://b:11434/v1" || cfg.BaseURLs["openai"] != "http://o/v1" {
		t.Fatalf("models/urls %+v", cfg)
	}
	if strings.Join(cfg.Agents["claude"].Argv, " ") != "claude -p --model opus" || strings.Join(cfg.Agents["x"].Argv, " ") != "x --json" || cfg.Agents["x"].Shell != "" {
		t.Fatalf("agents %+v", cfg.Agents)
	}
	if strings.Join(cfg.Keys["approve"].Keys, ",") != "Y" || strings.Join(cfg.Keys["kill"].Keys, ",") != "X,ctrl+x" {
		t.Fatalf("keys %+v", cfg.Keys)
	}
	if want := filepath.Join(project, ".stratum", FileName) + ":6"; cfg.Keys["approve"].Pos != want {
		t.Fatalf("approve set at %q, want %q", cfg.Keys["approve"].Pos, want)
	}
	if len(cfg.Files) != 2 {
		t.Fatalf("files %v", cfg.Files)
	}
	// Only $STRATUM_HOME without a project; nothing at all is fine too.
	if cfg, err := Load(""); err != nil || cfg.DefaultModel != "openai/gpt-4o-mini" || len(cfg.Files) != 1 {
		t.Fatalf("home only: %+v %v", cfg, err)
	}
	t.Setenv("STRATUM_HOME", t.TempDir())
	if cfg, err := Load(t.TempDir()); err != nil || len(cfg.Files) != 0 || cfg.Agents == nil || cfg.Keys == nil {
		t.Fatalf("no files: %+v %v", cfg, err)
	}
}

func TestLoadErrorsNameFileAndLine(t *testing.T) {
	cases := []struct{ name, text, want string }{
		{"bad yaml", "agents: [\n", FileName},
		{"empty agent", "agents:\n  bad: {}\n", FileName + ":2: agents.bad"},
		{"agent of wrong type", "agents:\n  bad: [1, [2]]\n", FileName + ":2: agents.bad"},
		{"key map", "keys:\n  approve: {a: b}\n", FileName + ":2: keys.approve: want a key or a list of keys"},
		{"llm_timeout word", "llm_timeout: soon\n", FileName + ":1: llm_timeout: want a positive duration"},
		{"llm_timeout zero", "llm_timeout: 0s\n", FileName + ":1: llm_timeout: want a positive duration"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			t.Setenv("STRATUM_HOME", home)
			write(t, filepath.Join(home, FileName), c.text)
			_, err := Load("")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestHome(t *testing.T) {
	t.Setenv("STRATUM_HOME", "/x/y")
	if h, err := Home(); err != nil || h != "/x/y" {
		t.Fatalf("%q %v", h, err)
	}
	t.Setenv("STRATUM_HOME", "")
	t.Setenv("HOME", "/home/ann")
	if h, err := Home(); err != nil || h != "/home/ann/.stratum" {
		t.Fatalf("%q %v", h, err)
	}
}

func TestLLMTimeout(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	t.Setenv("STRATUM_HOME", home)
	write(t, filepath.Join(home, FileName), "llm_timeout: 90s\n")
	if cfg, err := Load(""); err != nil || cfg.LLMTimeout != 90*time.Second {
		t.Fatalf("llm_timeout: %v, %v", cfg.LLMTimeout, err)
	}
	write(t, filepath.Join(project, ".stratum", FileName), "llm_timeout: 600\n") // seconds
	if cfg, err := Load(project); err != nil || cfg.LLMTimeout != 10*time.Minute {
		t.Fatalf("project llm_timeout: %v, %v", cfg.LLMTimeout, err)
	}
}

func TestLoadStoreSettings(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	t.Setenv("STRATUM_HOME", home)
	write(t, filepath.Join(home, FileName), "store: etcd://127.0.0.1:2379/team\nstore_timeout: 3s\netcd:\n  ca: certs/ca.pem\n  user: ann\n  password: pw\n")
	write(t, filepath.Join(project, ".stratum", FileName), "etcd:\n  insecure: true\n  cert: /abs/c.pem\n")
	cfg, err := Load(project)
	if err != nil {
		t.Fatal(err)
	}
	want := Etcd{CAFile: filepath.Join(home, "certs/ca.pem"), CertFile: "/abs/c.pem", User: "ann", Password: "pw", Insecure: true}
	if cfg.Store != "etcd://127.0.0.1:2379/team" || cfg.StoreTimeout != 3*time.Second || cfg.Etcd != want {
		t.Fatalf("store settings = %q %v %+v", cfg.Store, cfg.StoreTimeout, cfg.Etcd)
	}
	write(t, filepath.Join(project, ".stratum", FileName), "store: other.db\nstore_timeout: soon\n")
	if _, err := Load(project); err == nil || !strings.Contains(err.Error(), "store_timeout") {
		t.Fatalf("a bad store_timeout: %v", err)
	}
	write(t, filepath.Join(project, ".stratum", FileName), "store: other.db\n")
	if cfg, err := Load(project); err != nil || cfg.Store != filepath.Join(project, ".stratum", "other.db") {
		t.Fatalf("a relative store path = %q, %v", cfg.Store, err)
	}
}

// TestParseTimeout: a timeout from configuration or the environment is
// positive and at most 365 days, in seconds or as a Go duration; a number
// of seconds that would overflow when multiplied is refused, not wrapped.
func TestParseTimeout(t *testing.T) {
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"90s", 90 * time.Second, true},
		{"10m", 10 * time.Minute, true},
		{"120", 2 * time.Minute, true},
		{"31536000", 365 * 24 * time.Hour, true},
		{"8760h", 365 * 24 * time.Hour, true},
		{"0", 0, false},
		{"-3", 0, false},
		{"0s", 0, false},
		{"soon", 0, false},
		{"31536001", 0, false},
		{"9300000000", 0, false}, // × 1e9 ns overflows int64
		{"18446744073709551617", 0, false},
		{"8761h", 0, false},
	}
	for _, c := range cases {
		got, err := ParseTimeout(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseTimeout(%q) = %v, %v; want %v (ok %v)", c.in, got, err, c.want, c.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "at most 365 days") {
			t.Errorf("ParseTimeout(%q): %v does not say the range", c.in, err)
		}
	}
}
