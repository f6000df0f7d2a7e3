//go:build unix

package store

import (
	"os"
	"syscall"
)

// unlockFile releases the flock bbolt took on f.
func unlockFile(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
