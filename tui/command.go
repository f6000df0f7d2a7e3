package tui

import (
	"context"
	"errors"
	"io"
	"os"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/config"
	runner "github.com/stratum-go/stratum/engine/run"
	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/specs/watch"
)

// CommandOptions is `stratum tui` as main.go starts it: its flags, the
// service over the store main opened, the project's configuration and the
// process's streams.
type CommandOptions struct {
	Service *engine.Service
	Backend string // the store's name (Opened.Name)
	// Invocation runs this stratum in the commands the console prints
	// (run.Invoked.Invocation; "stratum" when empty).
	Invocation string
	// Plain, Once and NoColor are --plain, --once and --no-color.
	Plain, Once, NoColor bool
	// SpecDirs are the directories given (--watch and DIR arguments, checked
	// to be directories). None: the console watches "." (when it exists),
	// --plain streams no validation.
	SpecDirs []string
	// Config is the project's configuration, ConfigErr why it did not load
	// (only the full console needs it: its keys, the runs it starts).
	Config    config.Config
	ConfigErr error
	// SweepInterval is how soon a failed deadline sweep is retried (the
	// console applies gate deadlines as they fall due, as stratum mcp).
	SweepInterval time.Duration
	// Terminal says stdin and stdout are a terminal: the full console
	// needs one.
	Terminal bool
	In       io.Reader
	Out      io.Writer
}

// UsageError is a problem with how `stratum tui` was started (no
// terminal, a --watch directory that cannot be watched, a configuration or
// key map that does not load): the commands' one usage error, engine/run's,
// which runner.ErrorStatus maps to exit 2.
type UsageError = runner.UsageError

// Command runs `stratum tui` until ctx ends or the user quits: the line
// mode (RunPlain) with --plain, else the full console (Run) on the
// terminal behind o.Out. Unless --once, gate deadlines are applied in the
// background while it runs. An error after ctx ended is not reported.
func Command(ctx context.Context, o CommandOptions) error {
	src := ServiceSource(o.Service)
	if !o.Once {
		go func() { _ = o.Service.EnforceDeadlines(ctx, o.SweepInterval, func(int, error) {}) }()
	}
	var err error
	if o.Plain {
		err = commandPlain(ctx, o, src)
	} else {
		err = commandConsole(ctx, o, src)
	}
	var ue *UsageError
	if err != nil && !errors.As(err, &ue) && ctx.Err() != nil {
		return nil
	}
	return err
}

// commandPlain is `stratum tui --plain`.
func commandPlain(ctx context.Context, o CommandOptions, src Source) error {
	popt := PlainOptions{Source: src, Out: o.Out, Once: o.Once, Backend: o.Backend, Invocation: o.Invocation}
	if len(o.SpecDirs) > 0 && !o.Once {
		w, err := watch.New(o.SpecDirs, watch.DefaultOptions())
		if err != nil {
			return &UsageError{Err: errors.New("--watch: " + err.Error())}
		}
		defer w.Close()
		popt.Specs = w.Updates()
	}
	return RunPlain(ctx, popt)
}

// commandConsole is the full-screen `stratum tui`.
func commandConsole(ctx context.Context, o CommandOptions, src Source) error {
	if !o.Terminal {
		return &UsageError{Err: errors.New("tui needs a terminal on stdin and stdout; use --plain for logs and pipes")}
	}
	if o.ConfigErr != nil {
		return &UsageError{Err: o.ConfigErr}
	}
	keys, err := KeyMapFrom(o.Config.Keys)
	if err != nil {
		return &UsageError{Err: err}
	}
	dirs := o.SpecDirs
	if len(dirs) == 0 {
		if _, err := os.Stat("."); err == nil {
			dirs = []string{"."}
		}
	}
	return Run(ctx, RunOptions{Source: src, SpecDirs: dirs, Keys: keys, NoColor: o.NoColor,
		Reviewer: review.CurrentUser(), Backend: o.Backend, Invocation: o.Invocation, In: o.In, Out: runner.Unmasked(o.Out),
		Runner: runner.Background{Service: o.Service, Config: o.Config, Invocation: o.Invocation}})
}
