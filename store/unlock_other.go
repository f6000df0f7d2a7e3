//go:build !unix

package store

import "os"

// unlockFile is a no-op where bbolt does not use flock; closing f releases
// the lock.
func unlockFile(*os.File) {}
