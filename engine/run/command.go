package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/specs"
)

// Defaults of the command executor.
const (
	// DefaultMaxOutput caps what a command may print on stdout.
	DefaultMaxOutput = 10 << 20
	// stderrTail is how much of stderr's end a violation carries.
	stderrTail = 2048
)

// CommandExecutor runs the `run:` command of compute functions and inline
// steps. A string command runs under `sh -c`, a list runs as argv. The
// resolved inputs arrive as one JSON object on stdin and as
// STRATUM_INPUT_<NAME> variables (upper-cased name, non-alphanumerics as
// '_'; plain strings verbatim, any other value as JSON). STRATUM_FLOW_ID,
// STRATUM_STEP_ID, STRATUM_ATTEMPT, in iteration loops STRATUM_ITERATION
// (1-based), on retries STRATUM_VIOLATIONS (a JSON array) and after a
// revise STRATUM_REVISE_FEEDBACK are set too; a fan-out task's command
// also gets {"task": …, "prompt": …} on stdin and STRATUM_TASK_ID. A value over MaxEnvValue (or
// past MaxEnvTotal) goes to a file instead, named by <VAR>_FILE (see
// environment). Stdout must be the JSON result (when it is not,
// its last non-empty line is tried); a non-zero exit, invalid JSON, output
// over MaxOutput or the deadline (budget.ms, flow budget) passing is an
// *engine.AttemptError carrying stderr's tail. On timeout the whole process
// group is killed.
type CommandExecutor struct {
	// MaxOutput caps stdout (default DefaultMaxOutput).
	MaxOutput int
	// Env is the base environment (default os.Environ()).
	Env []string
	// TempDir holds the files of values too large for the environment
	// (default os.TempDir()); each attempt's are removed when it ends.
	TempDir string
}

// commandOf is the command a step executes: the step's own `run:` (inline
// steps) or its function's.
func commandOf(step *specs.Step) *specs.Command {
	if step.Run != nil {
		return step.Run
	}
	if step.Fn != nil {
		return step.Fn.Run
	}
	return nil
}

// Execute runs one attempt.
func (c *CommandExecutor) Execute(ctx context.Context, req engine.StepRequest) (engine.StepOutcome, error) {
	command := commandOf(req.Step)
	if command == nil {
		return engine.StepOutcome{}, &engine.AttemptError{Kind: engine.AttemptConfig,
			Violations: []string{fmt.Sprintf("step '%s' has no run: command", req.Step.ID)}}
	}
	in := nonNilInputs(req.Inputs)
	if req.Task != nil {
		// A fan-out task: {"task": {…}, "prompt": "…"} merged with the
		// step's inputs (the prompt: its intent_template rendered, a
		// pipeline stage's with {item}, {prev}, …).
		merged := make(map[string]any, len(in)+2)
		for k, v := range in {
			merged[k] = v
		}
		merged["task"] = req.Task
		merged["prompt"] = req.Step.Intent
		in = merged
	}
	stdin, err := json.Marshal(in)
	if err != nil {
		return engine.StepOutcome{}, &engine.AttemptError{Kind: engine.AttemptConfig,
			Violations: []string{"inputs are not JSON-encodable: " + err.Error()}}
	}
	if !req.Budget.Deadline.IsZero() && !req.Budget.Deadline.After(time.Now()) {
		return engine.StepOutcome{}, fmt.Errorf("step '%s': no time left: %w", req.Step.ID, engine.ErrBudgetExhausted)
	}
	if command.Shell == "" && len(command.Argv) == 0 {
		return engine.StepOutcome{}, &engine.AttemptError{Kind: engine.AttemptConfig,
			Violations: []string{fmt.Sprintf("step '%s' has an empty run: command", req.Step.ID)}}
	}
	dir := req.Dir
	if command.Dir != "" {
		dir = command.Dir
		if !filepath.IsAbs(command.Dir) && req.Dir != "" {
			dir = filepath.Join(req.Dir, command.Dir)
		}
	}
	env, cleanup, err := c.environment(command, req)
	if err != nil {
		return engine.StepOutcome{}, err
	}
	defer cleanup()
	ctx, cancel := withBudget(ctx, req.Budget)
	defer cancel()
	stdout, stderr, err := process{
		name: "command", argv: command.Argv, shell: command.Shell, dir: dir,
		env: env, stdin: bytes.NewReader(stdin), maxOut: c.MaxOutput,
		tooLargeHint: "print a smaller JSON result (write large data to a file and return its path)",
	}.run(ctx)
	if err != nil {
		return engine.StepOutcome{}, err
	}
	out, err := parseJSONResult(stdout)
	if err != nil {
		return engine.StepOutcome{}, &engine.AttemptError{Kind: engine.AttemptBadJSON,
			Violations: []string{withTail("command output is not a JSON result: "+err.Error(), stderr)}}
	}
	return engine.StepOutcome{Output: out}, nil
}

func nonNilInputs(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// envName upper-cases an input name and maps anything but letters, digits
// and '_' to '_'.
func envName(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) || r == '_':
			b.WriteRune(unicode.ToUpper(r))
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// envValue is a plain string verbatim, anything else as compact JSON.
func envValue(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// parseJSONResult decodes a command's stdout: the whole output as one JSON
// value, else its last non-empty line (commands that log before printing
// their result).
func parseJSONResult(b []byte) (any, error) {
	text := bytes.TrimSpace(b)
	if len(text) == 0 {
		return nil, errors.New("empty output (print the result as JSON on stdout)")
	}
	v, err := decodeOne(text)
	if err == nil {
		return v, nil
	}
	lines := bytes.Split(text, []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		line := bytes.TrimSpace(lines[i])
		if len(line) == 0 {
			continue
		}
		if v, err2 := decodeOne(line); err2 == nil {
			return v, nil
		}
		break
	}
	return nil, fmt.Errorf("%v (output starts %q)", err, clip(string(text), 120))
}

func decodeOne(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// cappedBuffer keeps at most max bytes and notes an overflow. (It must not
// embed bytes.Buffer: io.Copy would use its ReadFrom and bypass the cap.)
type cappedBuffer struct {
	buf      bytes.Buffer
	max      int
	overflow bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	room := b.max - b.buf.Len()
	if len(p) > room {
		b.overflow = true
		if room > 0 {
			b.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *cappedBuffer) Bytes() []byte  { return b.buf.Bytes() }
func (b *cappedBuffer) String() string { return b.buf.String() }

// tailBuffer keeps the last max bytes written.
type tailBuffer struct {
	buf       []byte
	max       int
	truncated bool
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
		t.truncated = true
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	b := t.buf
	if len(b) > t.max {
		b = b[len(b)-t.max:]
		t.truncated = true
	}
	if t.truncated {
		return "…" + string(b)
	}
	return string(b)
}
