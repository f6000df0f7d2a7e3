//go:build !linux && !darwin

package store

import "os"

// genOf is fi's generation (without the transaction id): size and
// modification time only on this system.
func genOf(fi os.FileInfo) generation {
	return generation{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
}
