package run

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/specs"
)

// Bounds of the values stratum puts in a command's environment. Linux
// refuses to start a program when one variable exceeds 128 KiB (E2BIG,
// "argument list too long"), and the environment and the arguments together
// share a limit of their own, so a large input or revise rationale made a
// step unrunnable. Values past either bound go to a file.
const (
	// MaxEnvValue is the largest value set as a variable itself.
	MaxEnvValue = 32 << 10
	// MaxEnvTotal bounds the values of the variables stratum sets, together.
	MaxEnvTotal = 128 << 10
)

// environment builds the command's environment: the base (Env, else the
// process's), the command's own env, then stratum's variables. A value of
// stratum's over MaxEnvValue, or that would take its variables past
// MaxEnvTotal, is written to a file (mode 0600, in a directory of its own
// under TempDir) and the variable <VAR>_FILE names it instead:
// STRATUM_INPUT_<NAME>_FILE, STRATUM_VIOLATIONS_FILE,
// STRATUM_REVISE_FEEDBACK_FILE. The file holds exactly what the variable
// would have. cleanup removes the files; call it when the process ended.
func (c *CommandExecutor) environment(command *specs.Command, req engine.StepRequest) (env []string, cleanup func(), err error) {
	env = c.Env
	if env == nil {
		env = os.Environ()
	}
	env = append([]string(nil), env...)
	keys := make([]string, 0, len(command.Env))
	for k := range command.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+command.Env[k])
	}
	env = append(env,
		"STRATUM_FLOW_ID="+req.FlowID,
		"STRATUM_STEP_ID="+req.Step.ID,
		"STRATUM_ATTEMPT="+strconv.Itoa(req.Attempt),
	)
	if req.Iteration > 0 {
		env = append(env, "STRATUM_ITERATION="+strconv.Itoa(req.Iteration))
	}
	if req.Task != nil {
		env = append(env, "STRATUM_TASK_ID="+req.TaskID())
	}
	if req.Worktree != "" {
		env = append(env, "STRATUM_WORKTREE="+req.Worktree)
	}

	// The values that may be large, in a fixed order: the inputs by name,
	// then the violations, then the feedback.
	type variable struct{ name, value string }
	var vars []variable
	names := make([]string, 0, len(req.Inputs))
	for k := range req.Inputs {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		vars = append(vars, variable{"STRATUM_INPUT_" + envName(k), envValue(req.Inputs[k])})
	}
	if len(req.Violations) > 0 {
		b, _ := json.Marshal(req.Violations)
		vars = append(vars, variable{"STRATUM_VIOLATIONS", string(b)})
	}
	if f := req.Feedback(); f != nil {
		b, _ := json.Marshal(f)
		vars = append(vars, variable{"STRATUM_REVISE_FEEDBACK", string(b)})
	}

	dir := ""
	cleanup = func() {
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
	}
	total := 0
	for i, v := range vars {
		if len(v.value) <= MaxEnvValue && total+len(v.value) <= MaxEnvTotal {
			total += len(v.value)
			env = append(env, v.name+"="+v.value)
			continue
		}
		if dir == "" {
			if dir, err = os.MkdirTemp(c.TempDir, "stratum-env-"); err != nil {
				return nil, cleanup, fmt.Errorf("step '%s': a directory for %s (%d bytes, too large for the environment): %w", req.Step.ID, v.name, len(v.value), err)
			}
		}
		path := filepath.Join(dir, strconv.Itoa(i)+"-"+v.name)
		if err := os.WriteFile(path, []byte(v.value), 0o600); err != nil {
			cleanup()
			return nil, func() {}, fmt.Errorf("step '%s': writing %s (%d bytes, too large for the environment): %w", req.Step.ID, v.name, len(v.value), err)
		}
		env = append(env, v.name+"_FILE="+path)
	}
	return env, cleanup, nil
}
