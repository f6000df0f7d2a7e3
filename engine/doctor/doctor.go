// Package doctor is `stratum doctor`: it checks what breaks runs before a
// run meets it — the store (it opens, its schema, a write transaction can
// start), the default model and the models the project's specs name (the
// provider resolves, its key is set, its base URL answers a GET within
// two seconds, no token spent), the agent CLIs `stratum run` would call,
// and, in a project set up for an agent, the MCP registration (engine/mcp's
// checks). Each finding is one line; a failure says its fix in one line.
// A finding that breaks nothing yet (an agent CLI no spec uses, no default
// model while every infer step names its own) is a warning: the command
// exits 1 only on failures.
//
// main.go binds the flags and injects the store probe (store/backend,
// which engine never imports): Options.Store; Command is the command's
// body (the checks, the report printed, the exit status).
//
// The package is importable because the command needs it, not promised.
package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"

	"github.com/stratum-go/stratum/engine/config"
	"github.com/stratum-go/stratum/engine/mcp"
	"github.com/stratum-go/stratum/specs"
)

// Status is a check's verdict.
type Status string

// The verdicts. Only Fail makes the command exit 1.
const (
	OK   Status = "ok"
	Warn Status = "warn"
	Fail Status = "fail"
	Skip Status = "skip" // nothing to check here
)

// Check is one finding.
type Check struct {
	// Area is what was checked: store, model, key, provider, agent, mcp.
	Area   string `json:"area"`
	Status Status `json:"status"`
	// OK is false on a failure only.
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	// Fix is the one-line fix of a failure (or what to do about a warning).
	Fix string `json:"fix,omitempty"`
}

// Report is every finding; OK when none failed.
type Report struct {
	OK     bool    `json:"ok"`
	Checks []Check `json:"checks"`
}

func (r *Report) add(area string, s Status, detail, fix string) {
	r.Checks = append(r.Checks, Check{Area: area, Status: s, OK: s != Fail, Detail: detail, Fix: fix})
	if s == Fail {
		r.OK = false
	}
}

// StoreProbe is what the store probe learned (backend.Probe in the
// binary): the store's name, its schema and flows, and why it did not
// open, read or take a write transaction. WriteProbed is false where no
// write can be probed without writing (etcd).
type StoreProbe struct {
	Name        string
	Schema      int
	Flows       int
	Open        error
	Read        error
	Write       error
	WriteProbed bool
}

// Options are what the checks read.
type Options struct {
	// Config is the loaded configuration ($STRATUM_HOME/config.yaml and the
	// project's .stratum/config.yaml); ConfigErr why it did not load (a
	// failure: every command refuses it).
	Config    config.Config
	ConfigErr error
	// Dir is where the project search starts (default "."): its root (the
	// nearest directory with .git) holds the specs whose needs are
	// checked and the MCP registration.
	Dir string
	// Store probes the store commands would open (nil: not checked).
	Store func(ctx context.Context) StoreProbe
	// MCP are the options of the MCP registration checks (Dir is set from
	// Dir when empty).
	MCP mcp.DoctorOptions
	// Getenv reads the environment (nil: os.Getenv); LookPath finds a
	// command (nil: exec.LookPath); Reach asks whether a base URL answers
	// (nil: infer.Reach, one GET bounded by two seconds).
	Getenv   func(string) string
	LookPath func(string) (string, error)
	Reach    func(ctx context.Context, url string) (int, error)
	// Invocation runs this stratum in the fixes printed ("stratum" when
	// empty; run.Invoked.Invocation in the binary).
	Invocation string
}

// Run runs every check.
func Run(ctx context.Context, o Options) (Report, error) {
	if o.Dir == "" {
		o.Dir = "."
	}
	if o.Invocation == "" {
		o.Invocation = "stratum"
	}
	if o.MCP.Invocation == "" {
		o.MCP.Invocation = o.Invocation
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.LookPath == nil {
		o.LookPath = exec.LookPath
	}
	rep := Report{OK: true, Checks: []Check{}}
	if o.ConfigErr != nil {
		rep.add("config", Fail, o.ConfigErr.Error(), "fix the file and line named, then run "+o.Invocation+" doctor again")
	}
	if o.Store != nil {
		checkStore(&rep, o.Store(ctx), o.Invocation)
	}
	needs, err := projectNeeds(o.Dir)
	if err != nil {
		return rep, err
	}
	checkModels(ctx, &rep, o, needs)
	checkAgents(&rep, o, needs)
	if o.MCP.Dir == "" {
		o.MCP.Dir = o.Dir
	}
	if o.MCP.Getenv == nil {
		o.MCP.Getenv = o.Getenv
	}
	m, err := mcp.Doctor(o.MCP)
	if err != nil {
		return rep, err
	}
	for _, c := range m.Checks {
		s := OK
		switch {
		case c.Skipped:
			s = Skip
		case !c.OK:
			s = Fail
		}
		rep.add("mcp", s, c.Config+": "+c.Check+": "+c.Detail, c.Fix)
	}
	return rep, nil
}

// Command is `stratum doctor`: it runs the checks (Run) and prints the
// report on w (Write); exit 1 when a check failed. An error with status 0
// is a failure to write the report.
func Command(ctx context.Context, o Options, w io.Writer, asJSON bool) (status int, err error) {
	rep, err := Run(ctx, o)
	if err != nil {
		return 1, err
	}
	if err := rep.Write(w, asJSON); err != nil {
		return 0, err
	}
	if !rep.OK {
		return 1, nil
	}
	return 0, nil
}

// Write prints the report: one line per check (ok, warn, FAIL, skip; a
// fix after —), or the JSON object.
func (r Report) Write(w io.Writer, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	for _, c := range r.Checks {
		mark := map[Status]string{OK: "ok  ", Warn: "warn", Fail: "FAIL", Skip: "skip"}[c.Status]
		line := fmt.Sprintf("%s %s: %s", mark, c.Area, c.Detail)
		if c.Fix != "" {
			line += " — " + c.Fix
		}
		if _, err := fmt.Fprintln(w, specs.EscapeControl(line)); err != nil {
			return err
		}
	}
	return nil
}
