package run

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"

	"github.com/stratum-go/stratum/engine"
)

// process is one subprocess an executor starts: a command (`run:`) or an
// agent CLI. It is the one place stratum launches a program: its own process
// group (a timeout or an interruption kills the whole group), stdout capped,
// the tail of stderr kept for violations, and a failure mapped onto an
// *engine.AttemptError whose text names the process.
type process struct {
	name  string   // how violations name it: "command", "agent claude"
	argv  []string // argv, or
	shell string   // a `sh -c` script
	dir   string
	env   []string
	stdin io.Reader
	// maxOut caps stdout (DefaultMaxOutput when zero).
	maxOut int
	// tooLargeHint is appended to the output-too-large violation.
	tooLargeHint string
	// onLine, when set, receives each line of stdout as it is written
	// (without its newline; a last line without one when the process ends).
	onLine func(string)
	// startFailure is the kind of a process that cannot start
	// (engine.AttemptExit: it spends an attempt; engine.AttemptConfig: a
	// misconfiguration that stops the run without spending one).
	startFailure string
}

// waitDelay is how long a process's pipes are read after it exited: a
// process it started in the background may keep them open.
const waitDelay = 2 * time.Second

// run starts the process, waits for it and returns its stdout and the tail
// of its stderr. A failed attempt is an *engine.AttemptError; an
// interruption (ctx canceled, not its deadline) is ctx's error. ctx's
// deadline is the budget's: reaching it is an AttemptTimeout.
func (p process) run(ctx context.Context) ([]byte, *tailBuffer, error) {
	var cmd *exec.Cmd
	switch {
	case len(p.argv) > 0:
		cmd = exec.CommandContext(ctx, p.argv[0], p.argv[1:]...)
	case p.shell != "":
		cmd = exec.CommandContext(ctx, "sh", "-c", p.shell)
	default:
		return nil, nil, &engine.AttemptError{Kind: engine.AttemptConfig, Violations: []string{p.name + " is empty"}}
	}
	cmd.Dir, cmd.Env, cmd.Stdin = p.dir, p.env, p.stdin
	maxOut := p.maxOut
	if maxOut <= 0 {
		maxOut = DefaultMaxOutput
	}
	stdout := &cappedBuffer{max: maxOut}
	stderr := &tailBuffer{max: stderrTail}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	var lines *lineWriter
	if p.onLine != nil {
		lines = &lineWriter{fn: p.onLine}
		cmd.Stdout = io.MultiWriter(stdout, lines)
	}
	setProcessGroup(cmd)
	cmd.WaitDelay = waitDelay
	runErr := cmd.Run()
	if lines != nil {
		lines.flush()
	}
	if errors.Is(runErr, exec.ErrWaitDelay) {
		// The process exited successfully, but a process it started in
		// the background (`server &`) still held stdout or stderr open
		// waitDelay later: what the process printed before it exited is
		// its output; the background process is left running, and what
		// it prints is dropped.
		runErr = nil
	}

	fail := func(kind, msg string) ([]byte, *tailBuffer, error) {
		return nil, stderr, &engine.AttemptError{Kind: kind, Violations: []string{withTail(msg, stderr)}}
	}
	if err := ctx.Err(); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fail(engine.AttemptTimeout, p.name+" timed out (budget deadline reached; process group killed)")
		}
		return nil, stderr, err
	}
	if runErr != nil {
		var ee *exec.ExitError
		if errors.As(runErr, &ee) {
			return fail(engine.AttemptExit, fmt.Sprintf("%s exited with status %d", p.name, ee.ExitCode()))
		}
		kind := p.startFailure
		if kind == "" {
			kind = engine.AttemptExit
		}
		return fail(kind, p.name+" could not run: "+runErr.Error())
	}
	if stdout.overflow {
		msg := fmt.Sprintf("%s output exceeds %d bytes", p.name, maxOut)
		if p.tooLargeHint != "" {
			msg += "; " + p.tooLargeHint
		}
		return nil, stderr, &engine.AttemptError{Kind: engine.AttemptTooLarge, Violations: []string{msg}}
	}
	return stdout.Bytes(), stderr, nil
}

// withBudget bounds ctx by the budget's deadline (a no-op without one).
func withBudget(ctx context.Context, b engine.BudgetView) (context.Context, context.CancelFunc) {
	if b.Deadline.IsZero() {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, b.Deadline)
}

func withTail(msg string, stderr *tailBuffer) string {
	t := strings.TrimSpace(stderr.String())
	if t == "" {
		return msg
	}
	return msg + "; stderr: " + t
}

// lineWriter calls fn with each complete line written to it.
type lineWriter struct {
	fn      func(string)
	partial []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		w.fn(strings.TrimSuffix(string(w.partial[:i]), "\r"))
		w.partial = w.partial[i+1:]
	}
	if len(w.partial) > 1<<20 { // a line longer than 1 MiB is told in pieces
		w.fn(string(w.partial))
		w.partial = nil
	}
	return len(p), nil
}

// flush tells a last line without a newline.
func (w *lineWriter) flush() {
	if len(w.partial) > 0 {
		w.fn(string(w.partial))
		w.partial = nil
	}
}
