//go:build !unix

package store

import "os"

// canKeepOpen is false where bbolt does not use flock: a handle is never
// kept open unlocked, every transaction opens the file.
const canKeepOpen = false

// unlockFile is a no-op where bbolt does not use flock; closing f releases
// the lock.
func unlockFile(*os.File) {}

// lockFile is never called where canKeepOpen is false.
func lockFile(*os.File, bool) bool { return false }
