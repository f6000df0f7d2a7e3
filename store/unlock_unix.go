//go:build unix

package store

import (
	"os"
	"syscall"
)

// canKeepOpen: a kept handle is unlocked and re-locked with flock (keep).
const canKeepOpen = true

// unlockFile releases the flock bbolt took on f.
func unlockFile(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }

// lockFile takes the flock on f again without waiting — exclusive as bbolt
// takes it on a writable open, shared (exclusive false) as on a read-only
// one — reporting whether it got it.
func lockFile(f *os.File, exclusive bool) bool {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err != syscall.EINTR {
			return err == nil
		}
	}
}
