//go:build !unix

package run

import "os/exec"

func setProcessGroup(cmd *exec.Cmd) {}

// processAlive cannot tell on this platform: assume alive (wait for the lease
// to expire).
func processAlive(pid int) bool { return true }
