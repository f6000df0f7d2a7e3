package tui

import (
	"context"
	"io"
	"os"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/specs/watch"
)

// RunOptions configure Run.
type RunOptions struct {
	Source Source
	// SpecDirs are watched for *.stratum.yaml files (recursively); none
	// leaves the Specs pane empty.
	SpecDirs []string
	Keys     KeyMap
	// NoColor forces monochrome output (NO_COLOR is honoured too).
	NoColor  bool
	Reviewer string
	// Runner, when set, lets the Specs pane run flows in-process; their
	// gates are offered to the console's own Sink.
	Runner FlowRunner
	Sink   *review.Queue
	In     io.Reader
	Out    io.Writer
	NoAlt  bool // stay in the normal screen buffer
	// Backend names the store in the header ("etcd etcd://…/team"); main
	// passes it, as the TUI never imports a store.
	Backend string
	// Invocation runs this stratum in the commands the console prints.
	Invocation string
	// Pager is the command the pager key runs ($PAGER, else less, when
	// nil).
	Pager   []string
	Program []tea.ProgramOption
}

// runStopTimeout bounds the wait for runs started from the console to
// release their leases when it quits.
const runStopTimeout = 10 * time.Second

// Run starts the console and blocks until the user quits or ctx ends.
func Run(ctx context.Context, opt RunOptions) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if opt.Out == nil {
		opt.Out = os.Stdout
	}
	if opt.In == nil {
		opt.In = os.Stdin
	}
	after, err := opt.Source.LastSeq(ctx)
	if err != nil {
		return err
	}
	events, err := opt.Source.Watch(ctx, after)
	if err != nil {
		return err
	}

	var specUpdates <-chan watch.Update
	if len(opt.SpecDirs) > 0 {
		w, err := watch.New(opt.SpecDirs, watch.DefaultOptions())
		if err != nil {
			return err
		}
		defer w.Close()
		specUpdates = w.Updates()
	}
	if opt.Pager == nil {
		opt.Pager = strings.Fields(os.Getenv("PAGER"))
		if len(opt.Pager) == 0 {
			opt.Pager = []string{"less"}
		}
	}
	mo := Options{
		Source: opt.Source, Keys: opt.Keys, Reviewer: opt.Reviewer,
		Styles: DefaultStyles(NewRenderer(opt.Out, opt.NoColor || noColor())),
		Events: events, Specs: specUpdates, Clipboard: opt.Out, Backend: opt.Backend, Pager: opt.Pager,
		Invocation: opt.Invocation,
	}
	if opt.Sink == nil {
		opt.Sink = review.NewQueue(0, 0)
	}
	mo.Sink, mo.Reviews, mo.Runner, mo.Context = opt.Sink, opt.Sink.Reviews(), opt.Runner, ctx
	popts := []tea.ProgramOption{tea.WithContext(ctx), tea.WithInput(opt.In), tea.WithOutput(opt.Out)}
	if !opt.NoAlt {
		popts = append(popts, tea.WithAltScreen())
	}
	popts = append(popts, opt.Program...)
	model := New(mo)
	_, err = tea.NewProgram(model, popts...).Run()
	// Runs started here stop with the console: wait for them to release
	// their leases, so their flows read stalled at once, not in 30 s.
	model.stopRuns(runStopTimeout)
	if err == tea.ErrProgramKilled && ctx.Err() != nil {
		return nil
	}
	return err
}
