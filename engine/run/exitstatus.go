package run

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"time"
)

// ExitStatus runs argv in dir (no shell, in its own process group, killed
// with its group after timeout) and returns its exit status: the guard's
// server-read evidence (git_commit_exists, command_exit_zero) runs its
// commands through it. An error is a command that could not start or ran
// out of time.
func ExitStatus(ctx context.Context, argv []string, dir string, timeout time.Duration) (int, error) {
	if len(argv) == 0 {
		return -1, errors.New("empty command")
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	setProcessGroup(cmd)
	cmd.WaitDelay = waitDelay
	err := cmd.Run()
	if ctx.Err() != nil {
		return -1, fmt.Errorf("%s: %w after %v", argv[0], ctx.Err(), timeout)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	if err != nil {
		return -1, err
	}
	return 0, nil
}
