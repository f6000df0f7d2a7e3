package run

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/stratum-go/stratum/engine/internal/fanout"
)

// The merge queue's pre-merge gate (the original's COMP-PAR-MERGE-QUEUE):
// a fan-out step's pre_merge_verify commands run in each task's worktree
// once the task's work is done, before it is committed and merged; the
// first command that fails bounces the task (it fails, its changes are
// not merged) with a record the step's retry reads, and the task's next
// run is told why in its prompt.

// gateExcerpt is how much of a failing gate command's output its bounce
// record keeps (its end), as the original.
const gateExcerpt = 2048

// defaultGateTimeout bounds one gate command of a task without a
// task_timeout.
const defaultGateTimeout = 30 * time.Minute

// runGate runs the pre-merge gate of task t in its worktree wt and
// returns the bounce record of the first failing command (nil: passed).
// Each command runs with sh -c in wt, bounded by timeout.
func (f *FanOut) runGate(ctx context.Context, t fanout.Task, wt string, timeout time.Duration) map[string]any {
	if timeout <= 0 {
		timeout = defaultGateTimeout
	}
	for _, cmd := range f.PreMergeVerify {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		c := exec.CommandContext(cctx, "sh", "-c", cmd)
		c.Dir = wt
		c.WaitDelay = 2 * time.Second
		setProcessGroup(c)
		out, err := c.CombinedOutput()
		timedOut := cctx.Err() != nil
		cancel()
		if err == nil {
			continue
		}
		b := map[string]any{"reason": "gate_failed", "command": cmd, "task_id": t.ID, "files": f.gateFiles(ctx, wt)}
		var ee *exec.ExitError
		switch {
		case timedOut:
			b["exit_code"] = nil
			b["excerpt"] = fmt.Sprintf("pre_merge_verify command timed out after %s: %s", timeout, cmd)
		case errors.As(err, &ee):
			b["exit_code"] = ee.ExitCode()
			b["excerpt"] = tail(string(out), gateExcerpt)
		default:
			b["exit_code"] = 127
			b["excerpt"] = tail("command not found: "+err.Error(), gateExcerpt)
		}
		return b
	}
	return nil
}

// gateFiles are the files a task changed in its worktree (tracked and
// untracked), for its bounce record.
func (f *FanOut) gateFiles(ctx context.Context, wt string) []any {
	out := []any{}
	seen := map[string]bool{}
	for _, args := range [][]string{{"diff", "--name-only", "HEAD"}, {"ls-files", "--others", "--exclude-standard"}} {
		text, err := git(context.WithoutCancel(ctx), wt, args...)
		if err != nil {
			continue
		}
		for _, l := range lines(text) {
			if !seen[l] {
				seen[l] = true
				out = append(out, l)
			}
		}
	}
	return out
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// bounceViolation is the violation of a task its gate bounced.
func bounceViolation(b map[string]any) string {
	code := "None"
	if c := b["exit_code"]; c != nil {
		code = fmt.Sprint(c)
	}
	return fmt.Sprintf("task '%v' failed pre-merge gate `%v` (exit %s) — diff NOT merged", b["task_id"], b["command"], code)
}

// bouncePrompt is the section a task's prompt gets when its previous
// attempt bounced before merge (the original's _format_bounce_for_prompt).
func bouncePrompt(b map[string]any) string {
	var lines []string
	lines = append(lines, "## Previous attempt was rejected before merge — fix this before finishing")
	switch b["reason"] {
	case "gate_failed":
		code := "?"
		if c := b["exit_code"]; c != nil {
			code = fmt.Sprint(c)
		}
		cmd := "?"
		if c, ok := b["command"].(string); ok && c != "" {
			cmd = c
		}
		lines = append(lines, fmt.Sprintf("Your last attempt FAILED the pre-merge gate `%s` (exit %s). It was not merged.", cmd, code))
	case "merge_conflict":
		lines = append(lines, "Your last attempt produced changes that CONFLICTED with another task's changes at merge time. It was not merged.")
	default:
		lines = append(lines, "Your last attempt was rejected before merge.")
	}
	files := "(none reported)"
	if fs, ok := b["files"].([]any); ok && len(fs) > 0 {
		parts := make([]string, len(fs))
		for i, x := range fs {
			parts[i] = fmt.Sprint(x)
		}
		files = strings.Join(parts, ", ")
	}
	lines = append(lines, "Files involved: "+files)
	if ex, ok := b["excerpt"].(string); ok && ex != "" {
		lines = append(lines, "Failure output:", "```", ex, "```")
	}
	return strings.Join(lines, "\n")
}
