package store

import (
	"os"
	"syscall"
)

// genOf is fi's generation (without the transaction id).
func genOf(fi os.FileInfo) generation {
	g := generation{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		g.dev, g.ino = uint64(st.Dev), st.Ino
		g.ctime = st.Ctim.Nano()
	}
	return g
}
