package doctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/stratum-go/stratum/engine/config"
	"github.com/stratum-go/stratum/engine/internal/infer"
	"github.com/stratum-go/stratum/engine/internal/llm"
	"github.com/stratum-go/stratum/engine/mcp"
	"github.com/stratum-go/stratum/engine/run"
	"github.com/stratum-go/stratum/specs"
	"github.com/stratum-go/stratum/specs/exprlang"
)

// checkStore: the store opens, reads and takes a write transaction.
func checkStore(rep *Report, p StoreProbe, inv string) {
	switch {
	case p.Open != nil:
		rep.add("store", Fail, fmt.Sprintf("%s does not open: %v", p.Name, p.Open), storeFix(p.Open, inv))
		return
	case p.Read != nil:
		rep.add("store", Fail, fmt.Sprintf("%s opens but cannot be read: %v", p.Name, p.Read), storeFix(p.Read, inv))
		return
	}
	rep.add("store", OK, fmt.Sprintf("%s opens, schema %d, %d flow%s", p.Name, p.Schema, p.Flows, plural(p.Flows)), "")
	switch {
	case !p.WriteProbed:
		rep.add("store", OK, "writes are not probed on etcd (nothing can be written without data): the first write checks the user's permission on the prefix", "")
	case p.Write != nil:
		rep.add("store", Fail, fmt.Sprintf("%s cannot take a write transaction: %v", p.Name, p.Write), writableFix)
	default:
		rep.add("store", OK, "a write transaction starts (nothing was written)", "")
	}
}

// writableFix is the fix of a store this user may not write (every
// command writes: sweeps, decisions, runs).
const writableFix = "make the file and its directory writable by this user (ls -l), or point STRATUM_STORE at a store you can write"

// storeFix is the one-line fix of a store that does not open or read.
func storeFix(err error, inv string) string {
	msg := err.Error()
	switch {
	case errors.Is(err, fs.ErrPermission):
		return writableFix
	case strings.Contains(msg, "newer stratum"):
		return "upgrade this stratum (every stratum sharing the store together), or point STRATUM_STORE at another store"
	case strings.Contains(msg, "corrupt"), strings.Contains(msg, "damaged"):
		return "run " + inv + " store check; move the file aside or restore its backup (stratum.db.bak-vN)"
	case strings.Contains(msg, "disk is full"):
		return "free space on the store's file system and run " + inv + " doctor again"
	case strings.Contains(msg, "etcd"):
		return "check the members, STRATUM_STORE and the STRATUM_ETCD_* settings (" + inv + " store info shows what is used)"
	}
	return "check STRATUM_STORE (or store: in config.yaml) and that STRATUM_HOME is a directory you can write"
}

// projectNeeds is what the specs of the project under dir need: every spec
// under the project's root (the nearest directory with .git) when there is
// one, else the specs in dir itself. Specs that do not parse are skipped
// (stratum validate reports them).
func projectNeeds(dir string) (run.Needs, error) {
	n := run.Needs{Agents: map[string]string{}, Models: map[string]string{}}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return n, err
	}
	root := mcp.ProjectRoot(abs)
	var files []string
	if _, err := os.Stat(filepath.Join(root, ".git")); err == nil {
		files, _ = specs.FindSpecFiles(root)
	} else {
		entries, _ := os.ReadDir(abs)
		for _, e := range entries {
			if !e.IsDir() && specs.IsSpecName(e.Name()) {
				files = append(files, filepath.Join(abs, e.Name()))
			}
		}
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		rel, err := filepath.Rel(abs, f)
		if err != nil {
			rel = f
		}
		if sp, ds := specs.Parse(rel, src, exprlang.Compile); sp != nil && !ds.HasErrors() {
			n.Add(sp)
		}
	}
	return n, nil
}

// checkModels: the default model, and each model a spec names — resolved
// as a call resolves it, its key set, its base URL answering.
func checkModels(ctx context.Context, rep *Report, o Options, needs run.Needs) {
	setup := infer.Setup{DefaultModel: o.Config.DefaultModel, BaseURLs: o.Config.BaseURLs, Getenv: o.Getenv}
	reach := o.Reach
	if reach == nil {
		reach = infer.Reach
	}
	reached := map[string]bool{}
	check := func(model, who string, required bool) {
		c := setup.CheckModel(model)
		label := c.Full
		if label == "" {
			label = model
		}
		switch {
		case c.Err != nil && c.Full == "" && model == "":
			s, fix := Warn, "set STRATUM_MODEL or default_model: in $STRATUM_HOME/config.yaml (e.g. openai/gpt-4o-mini)"
			detail := "no default model: an infer step that names no model would fail"
			if required {
				s, detail = Fail, "no default model, and "+who+" names none"
			}
			rep.add("model", s, detail, fix)
			return
		case c.Full == "":
			rep.add("model", Fail, fmt.Sprintf("%s (%s): %v", model, who, c.Err),
				"write the model as provider/model with a known provider, or set <PROVIDER>_BASE_URL to an OpenAI-compatible endpoint")
			return
		}
		rep.add("model", OK, fmt.Sprintf("%s (%s): provider %s at %s", label, who, c.Provider, c.BaseURL), "")
		switch {
		case c.KeyEnv == "":
			rep.add("key", OK, label+": its provider needs no key", "")
		case c.KeySet:
			rep.add("key", OK, label+": "+c.KeyEnv+" is set", "")
		case c.Err != nil:
			rep.add("key", Fail, fmt.Sprintf("%s needs %s, which is not set", label, c.KeyEnv),
				fmt.Sprintf("export %s=… in the shell that runs stratum (or run with --replay FILE)", c.KeyEnv))
		default:
			rep.add("key", OK, label+": "+c.KeyEnv+" is not set (optional for this provider)", "")
		}
		if reached[c.BaseURL] {
			return
		}
		reached[c.BaseURL] = true
		status, err := reach(ctx, c.BaseURL)
		if err != nil {
			rep.add("provider", Fail, fmt.Sprintf("%s does not answer: %v", c.BaseURL, err),
				fmt.Sprintf("start the server, or fix %s_BASE_URL / base_urls: in config.yaml, or the network", llm.EnvName(c.Provider)))
			return
		}
		rep.add("provider", OK, fmt.Sprintf("%s answers (HTTP %d to a GET; no token spent)", c.BaseURL, status), "")
	}
	who := "the default model"
	if o.Getenv("STRATUM_MODEL") != "" {
		who = "STRATUM_MODEL"
	} else if o.Config.DefaultModel != "" {
		who = "default_model in config.yaml"
	}
	if needs.Default != "" {
		check("", needs.Default, true)
	} else {
		check("", who, false)
	}
	for _, m := range sortedKeys(needs.Models) {
		check(m, needs.Models[m], true)
	}
}

// checkAgents: the agent CLIs stratum run would call are on PATH. One a
// spec uses, or one configured in config.yaml, fails when missing; a
// built-in one nothing uses only warns.
func checkAgents(rep *Report, o Options, needs run.Needs) {
	agents := run.Agents(o.Config.Agents)
	for _, name := range sortedKeys(agents) {
		cmd := commandName(agents[name])
		who, used := needs.Agents[name]
		_, configured := o.Config.Agents[name]
		path, err := o.LookPath(cmd)
		switch {
		case err == nil:
			rep.add("agent", OK, fmt.Sprintf("%s: %s", name, path), "")
		case used:
			rep.add("agent", Fail, fmt.Sprintf("%s: %s is not on PATH, and %s uses agent: %s", name, cmd, who, name),
				fmt.Sprintf("install %s (or configure agents: %s: in config.yaml)", cmd, name))
		case configured:
			rep.add("agent", Fail, fmt.Sprintf("%s: %s, configured in config.yaml, is not on PATH", name, cmd),
				"install it, or fix agents: "+name+": in config.yaml")
		default:
			rep.add("agent", Warn, fmt.Sprintf("%s: %s is not on PATH; a step with agent: %s would fail", name, cmd, name),
				"install it before a spec uses agent: "+name)
		}
	}
	for _, name := range sortedKeys(needs.Agents) {
		if _, ok := agents[name]; !ok {
			rep.add("agent", Fail, fmt.Sprintf("%s: unknown, and %s uses agent: %s", name, needs.Agents[name], name),
				"add it under agents: in $STRATUM_HOME/config.yaml or .stratum/config.yaml")
		}
	}
}

// commandName is the program an agent command starts: its argv[0], or the
// first word of its shell text.
func commandName(c config.Command) string {
	if len(c.Argv) > 0 {
		return c.Argv[0]
	}
	if f := strings.Fields(c.Shell); len(f) > 0 {
		return f[0]
	}
	return ""
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
