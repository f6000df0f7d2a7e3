package judge

import (
	"archive/zip"
	"bufio"
	"errors"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// treeArchive is the file of a turn directory that holds the staged tree
// (artifacts/, modified/ and manifest.json), stored uncompressed: one file
// instead of one per piece of evidence, because creating files is what
// staging used to spend its time on (about 100 µs of kernel time each on
// an idle 2-vCPU machine, ten times that under load).
const treeArchive = "turn.zip"

// manifestName is the staged manifest's name in the tree.
const manifestName = "manifest.json"

// treeWriter writes a staged tree into its archive: entries with the names
// as staged (no rewriting of '\' or '..', which zip's own fs view does),
// each regular file once, a name never both a file and a directory.
type treeWriter struct {
	f     *os.File
	buf   *bufio.Writer
	zw    *zip.Writer
	mtime time.Time
	files map[string]bool
	dirs  map[string]bool
}

func newTreeWriter(file string, mtime time.Time) (*treeWriter, error) {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return nil, err
	}
	buf := bufio.NewWriterSize(f, 1<<20)
	w := &treeWriter{f: f, buf: buf, zw: zip.NewWriter(buf), mtime: mtime, files: map[string]bool{}, dirs: map[string]bool{}}
	for _, d := range []string{bucketArtifacts, bucketModified} {
		if err := w.dir(d); err != nil {
			w.abort()
			return nil, err
		}
	}
	return w, nil
}

// dir adds a directory entry (the buckets exist even when empty).
func (w *treeWriter) dir(name string) error {
	w.dirs[name] = true
	h := &zip.FileHeader{Name: name + "/", Method: zip.Store, Modified: w.mtime}
	h.SetMode(fs.ModeDir | 0o555)
	_, err := w.zw.CreateRaw(h)
	return err
}

// has reports whether name is already staged as a file.
func (w *treeWriter) has(name string) bool { return w.files[name] }

// file adds a regular file. A name that is, or lies under, a staged file,
// or names a directory of staged files, is refused.
func (w *treeWriter) file(name string, data []byte) error {
	if w.files[name] || w.dirs[name] {
		return errorf(ErrStaging, "staging: %s is staged both as a file and as a directory", name)
	}
	for d := path.Dir(name); d != "."; d = path.Dir(d) {
		if w.files[d] {
			return errorf(ErrStaging, "staging: %s is staged both as a file and as a directory", d)
		}
		w.dirs[d] = true
	}
	w.files[name] = true
	h := &zip.FileHeader{Name: name, Method: zip.Store, Modified: w.mtime,
		CRC32: crc32.ChecksumIEEE(data), CompressedSize64: uint64(len(data)), UncompressedSize64: uint64(len(data))}
	h.SetMode(0o444)
	zf, err := w.zw.CreateRaw(h)
	if err != nil {
		return errorf(ErrStaging, "staging: %v", err)
	}
	if _, err := zf.Write(data); err != nil {
		return errorf(ErrStaging, "staging: %v", err)
	}
	return nil
}

// close finishes the archive.
func (w *treeWriter) close() error {
	err := w.zw.Close()
	if err == nil {
		err = w.buf.Flush()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// abort closes the archive after a failure; the turn directory keeps the
// partial file (a turn directory is never reused).
func (w *treeWriter) abort() { _ = w.f.Close() }

// tree is a staged turn read back from its archive: an fs.FS of its
// regular files and directories under the names they were staged with.
type tree struct {
	zr    *zip.ReadCloser
	files map[string]*zip.File
	dirs  map[string]bool // "." included
	names []string        // files, sorted
}

var _ fs.StatFS = (*tree)(nil)

// openTree opens the staged tree of the turn directory dir.
func openTree(dir string) (*tree, error) {
	// A name with '\' is "insecure" to zip under GODEBUG=zipinsecurepath=0;
	// the tree never extracts by zip's rules, so the reader is used anyway.
	zr, err := zip.OpenReader(filepath.Join(dir, treeArchive))
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return nil, err
	}
	t := &tree{zr: zr, files: make(map[string]*zip.File, len(zr.File)), dirs: map[string]bool{".": true}}
	for _, f := range zr.File {
		name := strings.TrimSuffix(f.Name, "/")
		if !fs.ValidPath(name) || name == "." {
			continue
		}
		if f.Mode().IsDir() {
			t.dirs[name] = true
			continue
		}
		if !f.Mode().IsRegular() {
			continue
		}
		t.files[name] = f
		t.names = append(t.names, name)
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			t.dirs[d] = true
		}
	}
	sort.Strings(t.names)
	return t, nil
}

// Close closes the archive.
func (t *tree) Close() error { return t.zr.Close() }

// Stat implements fs.StatFS without reading the archive.
func (t *tree) Stat(name string) (fs.FileInfo, error) {
	if f, ok := t.files[name]; ok {
		return f.FileInfo(), nil
	}
	if t.dirs[name] {
		return dirInfo(path.Base(name)), nil
	}
	return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
}

// Open implements fs.FS: a regular file is read from the archive (its
// checksum verified at the end); a directory can only be Stat'ed.
func (t *tree) Open(name string) (fs.File, error) {
	if f, ok := t.files[name]; ok {
		rc, err := f.Open()
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		return &treeFile{ReadCloser: rc, info: f.FileInfo()}, nil
	}
	if t.dirs[name] {
		return &treeFile{ReadCloser: treeDir(name), info: dirInfo(path.Base(name))}, nil
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

// treeDir is an open directory of the tree: it has nothing to read.
type treeDir string

func (d treeDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: string(d), Err: errors.New("is a directory")}
}
func (d treeDir) Close() error { return nil }

// isFile reports whether name is a staged regular file.
func (t *tree) isFile(name string) bool { _, ok := t.files[name]; return ok }

// readFile returns the content of a staged file.
func (t *tree) readFile(name string) ([]byte, error) { return fs.ReadFile(t, name) }

type treeFile struct {
	io.ReadCloser
	info fs.FileInfo
}

func (f *treeFile) Stat() (fs.FileInfo, error) { return f.info, nil }

// dirInfo is the FileInfo of a directory of the tree.
type dirInfo string

func (d dirInfo) Name() string       { return string(d) }
func (d dirInfo) Size() int64        { return 0 }
func (d dirInfo) Mode() fs.FileMode  { return fs.ModeDir | 0o555 }
func (d dirInfo) ModTime() time.Time { return time.Time{} }
func (d dirInfo) IsDir() bool        { return true }
func (d dirInfo) Sys() any           { return nil }

// ReadStaged returns a staged file of the turn directory dir:
// "artifacts/NAME.txt", "modified/PATH" or "manifest.json".
func ReadStaged(dir, name string) ([]byte, error) {
	t, err := openTree(dir)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	return t.readFile(name)
}
