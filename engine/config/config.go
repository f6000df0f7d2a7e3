package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// FileName is the name of the config file in $STRATUM_HOME and in a
// project's .stratum directory.
const FileName = "config.yaml"

// Home is the state directory: $STRATUM_HOME, else ~/.stratum.
func Home() (string, error) {
	if home := os.Getenv("STRATUM_HOME"); home != "" {
		return home, nil
	}
	h, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("cannot locate the home directory (set STRATUM_HOME): %w", err)
	}
	return filepath.Join(h, ".stratum"), nil
}

// Config is the merged configuration.
type Config struct {
	// DefaultModel is the model of infer steps that name none.
	DefaultModel string
	// BaseURLs are per-provider API base URLs.
	BaseURLs map[string]string
	// Agents are agent CLI commands by name (over the runner's built-in
	// ones).
	Agents map[string]Command
	// Keys are TUI key bindings by action name.
	Keys map[string]Keys
	// LLMTimeout bounds one attempt's LLM provider call, retries included
	// (llm_timeout: a duration such as 90s or 10m, or seconds; 0 = the
	// executor's default).
	LLMTimeout time.Duration
	// Store selects the store (store:): a bbolt file path, or
	// etcd://HOST:PORT[,HOST:PORT…]/PREFIX. Empty: the default file.
	// STRATUM_STORE overrides it (store/shared applies the environment).
	Store string
	// StoreTimeout bounds each call to the store (store_timeout; 0: the
	// backend's default).
	StoreTimeout time.Duration
	// Etcd are the etcd client's credentials and TLS files (etcd:).
	Etcd Etcd
	// Files are the files that were read, in order.
	Files []string
}

// Etcd configures the client of an etcd store. Relative file names are
// resolved against the directory of the config file that set them.
type Etcd struct {
	CertFile string // cert: client certificate (PEM)
	KeyFile  string // key: its private key (PEM)
	CAFile   string // ca: the CA that signed the members' certificates
	User     string // user
	Password string // password (never printed)
	// Insecure allows plain TCP to an endpoint that is not loopback.
	Insecure bool // insecure: true
}

// Command is how an agent CLI starts: Argv, or Shell (run by `sh -c`).
type Command struct {
	Argv  []string
	Shell string
}

// Keys are the keys bound to one action, and where they were set
// ("file:line"), for error messages.
type Keys struct {
	Keys []string
	Pos  string
}

// Files are the config files Load reads for projectDir, in order.
func Files(projectDir string) []string {
	var files []string
	if home, err := Home(); err == nil {
		files = append(files, filepath.Join(home, FileName))
	}
	if projectDir != "" {
		files = append(files, filepath.Join(projectDir, ".stratum", FileName))
	}
	return files
}

// Load reads the config files of projectDir ("" for none: only
// $STRATUM_HOME's), later files overriding earlier ones key by key.
func Load(projectDir string) (Config, error) {
	cfg := Config{BaseURLs: map[string]string{}, Agents: map[string]Command{}, Keys: map[string]Keys{}}
	for _, f := range Files(projectDir) {
		b, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return cfg, fmt.Errorf("config %s: %w", f, err)
		}
		if err := cfg.merge(f, b); err != nil {
			return cfg, err
		}
		cfg.Files = append(cfg.Files, f)
	}
	return cfg, nil
}

// raw is one file as written.
type raw struct {
	DefaultModel string               `yaml:"default_model"`
	BaseURLs     map[string]string    `yaml:"base_urls"`
	Agents       map[string]yaml.Node `yaml:"agents"`
	Keys         map[string]yaml.Node `yaml:"keys"`
	LLMTimeout   yaml.Node            `yaml:"llm_timeout"`
	Store        string               `yaml:"store"`
	StoreTimeout yaml.Node            `yaml:"store_timeout"`
	Etcd         struct {
		Cert     string `yaml:"cert"`
		Key      string `yaml:"key"`
		CA       string `yaml:"ca"`
		User     string `yaml:"user"`
		Password string `yaml:"password"`
		Insecure *bool  `yaml:"insecure"`
	} `yaml:"etcd"`
}

// relTo resolves name against the directory of the config file (a leading
// ~/ is the user's home directory).
func relTo(file, name string) string {
	if rest, ok := strings.CutPrefix(name, "~/"); ok {
		if h, err := os.UserHomeDir(); err == nil {
			return filepath.Join(h, rest)
		}
	}
	if filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(filepath.Dir(file), name)
}

func (c *Config) merge(file string, b []byte) error {
	var r raw
	if err := yaml.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("config %s: %v", file, err)
	}
	at := func(n yaml.Node) string { return fmt.Sprintf("%s:%d", file, n.Line) }
	if r.DefaultModel != "" {
		c.DefaultModel = r.DefaultModel
	}
	for k, v := range r.BaseURLs {
		c.BaseURLs[k] = v
	}
	duration := func(name string, n yaml.Node, into *time.Duration) error {
		if n.Kind == 0 {
			return nil
		}
		if n.Kind != yaml.ScalarNode {
			return fmt.Errorf("config %s: %s: %s", at(n), name, timeoutRange)
		}
		d, err := ParseTimeout(n.Value)
		if err != nil {
			return fmt.Errorf("config %s: %s: %v", at(n), name, err)
		}
		*into = d
		return nil
	}
	if err := duration("llm_timeout", r.LLMTimeout, &c.LLMTimeout); err != nil {
		return err
	}
	if err := duration("store_timeout", r.StoreTimeout, &c.StoreTimeout); err != nil {
		return err
	}
	if r.Store != "" {
		c.Store = r.Store
		if !strings.Contains(r.Store, "://") {
			c.Store = relTo(file, r.Store)
		}
	}
	for _, f := range []struct{ from, into *string }{{&r.Etcd.Cert, &c.Etcd.CertFile}, {&r.Etcd.Key, &c.Etcd.KeyFile}, {&r.Etcd.CA, &c.Etcd.CAFile}} {
		if *f.from != "" {
			*f.into = relTo(file, *f.from)
		}
	}
	if r.Etcd.User != "" {
		c.Etcd.User = r.Etcd.User
	}
	if r.Etcd.Password != "" {
		c.Etcd.Password = r.Etcd.Password
	}
	if r.Etcd.Insecure != nil {
		c.Etcd.Insecure = *r.Etcd.Insecure
	}
	for name, node := range r.Agents {
		var cmd Command
		switch node.Kind {
		case yaml.ScalarNode:
			cmd.Shell = node.Value
		case yaml.SequenceNode:
			if err := node.Decode(&cmd.Argv); err != nil {
				return fmt.Errorf("config %s: agents.%s: %v", at(node), name, err)
			}
		case yaml.MappingNode:
			var m struct {
				Argv  []string `yaml:"command"`
				Shell string   `yaml:"shell"`
			}
			if err := node.Decode(&m); err != nil {
				return fmt.Errorf("config %s: agents.%s: %v", at(node), name, err)
			}
			cmd = Command{Argv: m.Argv, Shell: m.Shell}
		}
		if len(cmd.Argv) == 0 && cmd.Shell == "" {
			return fmt.Errorf("config %s: agents.%s: want a command list, a shell string, or {command: [...]}", at(node), name)
		}
		c.Agents[name] = cmd
	}
	for action, node := range r.Keys {
		var keys []string
		switch node.Kind {
		case yaml.ScalarNode:
			keys = []string{node.Value}
		case yaml.SequenceNode:
			if err := node.Decode(&keys); err != nil {
				return fmt.Errorf("config %s: keys.%s: %v", at(node), action, err)
			}
		default:
			return fmt.Errorf("config %s: keys.%s: want a key or a list of keys", at(node), action)
		}
		c.Keys[action] = Keys{Keys: keys, Pos: at(node)}
	}
	return nil
}

// Secrets are the secret values the configuration holds (the etcd
// password), which everything stratum writes must mask (engine/internal/redact)
// beside the environment's.
func (c Config) Secrets() []string {
	var out []string
	if c.Etcd.Password != "" {
		out = append(out, c.Etcd.Password)
	}
	return out
}
