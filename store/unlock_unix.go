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

// lockFile takes the exclusive flock on f again without waiting, as bbolt
// takes it on a writable open, reporting whether it got it.
func lockFile(f *os.File) bool {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err != syscall.EINTR {
			return err == nil
		}
	}
}
