package judge

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Buckets of a staged turn.
const (
	bucketArtifacts = "artifacts"
	bucketModified  = "modified"
)

// ManifestEntry is one staged file (manifest.json): a missing modified file
// is recorded with SHA256 nil and Missing true.
type ManifestEntry struct {
	Bucket      string  `json:"bucket"`
	Path        string  `json:"path"`
	SHA256      *string `json:"sha256"`
	ByteSize    int64   `json:"byte_size"`
	WrittenAtMS int64   `json:"written_at_ms"`
	Missing     bool    `json:"missing,omitempty"`
}

// Turn is one staged turn: Dir holds turn.zip, the staged tree
// (artifacts/NAME.txt, modified/PATH and manifest.json; ReadStaged reads
// it). A Turn from Stage has its tree open until Close.
type Turn struct {
	N        int
	Dir      string
	Manifest []ManifestEntry
	tree     *tree
}

// Close closes the turn's staged tree.
func (t *Turn) Close() error {
	if t.tree == nil {
		return nil
	}
	return t.tree.Close()
}

// maxStagedFile bounds one staged file (a modified file larger is refused).
const maxStagedFile = 64 << 20

// Stage writes one turn's evidence under root/FLOW/STEP/turn-N, N the
// first free number from turn on (a directory is never overwritten), as
// one archive (turn.zip) of the original's staging tree. Artifact names
// are single path segments; modified files are paths relative to
// workspace, copied from it (a path that leaves the workspace, also
// through a symlink, is refused). The caller closes the Turn.
func Stage(root, flowID, stepID string, turn int, artifacts map[string]string, modified []string, workspace string, now func() time.Time) (*Turn, error) {
	if err := checkSegment("flow_id", flowID); err != nil {
		return nil, err
	}
	if err := checkSegment("step_id", stepID); err != nil {
		return nil, err
	}
	for name := range artifacts {
		if err := checkSegment("artifact name", name); err != nil {
			return nil, err
		}
		if strings.HasPrefix(name, ".") {
			return nil, errorf(ErrStaging, "artifact name cannot start with '.': %q", name)
		}
	}
	for _, rel := range modified {
		if err := checkModified(rel); err != nil {
			return nil, err
		}
	}
	stepDir := filepath.Join(root, flowID, stepID)
	if err := os.MkdirAll(stepDir, 0o755); err != nil {
		return nil, errorf(ErrStaging, "staging: %v", err)
	}
	if turn < 1 {
		turn = 1
	}
	t := &Turn{}
	for {
		dir := filepath.Join(stepDir, "turn-"+strconv.Itoa(turn))
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			t.N, t.Dir = turn, dir
			break
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, errorf(ErrStaging, "staging: %v", err)
		}
		turn++
	}
	if err := t.write(artifacts, modified, workspace, now); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *Turn) write(artifacts map[string]string, modified []string, workspace string, now func() time.Time) error {
	at := now()
	realWS, err := filepath.EvalSymlinks(workspace)
	if err != nil && len(modified) > 0 {
		return errorf(ErrStaging, "staging: workspace %s: %v", workspace, err)
	}
	w, err := newTreeWriter(filepath.Join(t.Dir, treeArchive), at)
	if err != nil {
		return errorf(ErrStaging, "staging: %v", err)
	}
	if err := t.fill(w, artifacts, modified, realWS, at.UnixMilli()); err != nil {
		w.abort()
		return err
	}
	if err := w.close(); err != nil {
		return errorf(ErrStaging, "staging: %v", err)
	}
	tr, err := openTree(t.Dir)
	if err != nil {
		return errorf(ErrStaging, "staging: reading the staged tree back: %v", err)
	}
	t.tree = tr
	return nil
}

// fill stages the evidence into w and records the manifest: artifacts by
// name, then the modified files as given (a path given twice is one
// file, listed twice), then manifest.json itself.
func (t *Turn) fill(w *treeWriter, artifacts map[string]string, modified []string, ws string, ms int64) error {
	names := sortedKeys(artifacts)
	t.Manifest = make([]ManifestEntry, 0, len(names)+len(modified))
	for _, name := range names {
		data := []byte(artifacts[name])
		if err := w.file(bucketArtifacts+"/"+name+".txt", data); err != nil {
			return err
		}
		t.Manifest = append(t.Manifest, entry(bucketArtifacts, name+".txt", data, ms))
	}
	staged := map[string]ManifestEntry{}
	r := &wsReader{ws: ws, realDirs: map[string]bool{}}
	for _, rel := range modified {
		name := path.Join(bucketModified, filepath.ToSlash(filepath.Clean(filepath.FromSlash(rel))))
		if e, ok := staged[name]; ok {
			e.Path = rel
			t.Manifest = append(t.Manifest, e)
			continue
		}
		e, data, err := r.read(rel, ms)
		if err != nil {
			return err
		}
		if !e.Missing {
			if err := w.file(name, data); err != nil {
				return err
			}
			staged[name] = e
		}
		t.Manifest = append(t.Manifest, e)
	}
	return w.file(manifestName, manifestJSON(t.Manifest))
}

// wsReader reads modified files inside the workspace (ws, symlink-free).
// It remembers the directories it found to be real ones (no symlink), so a
// turn of many files in few directories looks at each directory once; a
// path through a symlink is resolved in full (filepath.EvalSymlinks) and
// must stay inside the workspace.
type wsReader struct {
	ws       string
	realDirs map[string]bool
}

// resolve returns the symlink-free path of rel (clean, no '..').
func (r *wsReader) resolve(rel string) (string, error) {
	full := filepath.Join(r.ws, rel)
	for dir := filepath.Dir(rel); dir != "." && !r.realDirs[dir]; dir = filepath.Dir(dir) {
		if st, err := os.Lstat(filepath.Join(r.ws, dir)); err != nil || !st.IsDir() {
			return filepath.EvalSymlinks(full)
		}
		r.realDirs[dir] = true
	}
	if st, err := os.Lstat(full); err != nil || st.Mode()&fs.ModeSymlink != 0 {
		return filepath.EvalSymlinks(full)
	}
	return full, nil
}

// read reads one modified file for its snapshot; a file that is not there
// (or not a regular file) is recorded as missing.
func (r *wsReader) read(rel string, ms int64) (ManifestEntry, []byte, error) {
	missing := ManifestEntry{Bucket: bucketModified, Path: rel, WrittenAtMS: ms, Missing: true}
	src, err := r.resolve(filepath.Clean(filepath.FromSlash(rel)))
	if errors.Is(err, fs.ErrNotExist) {
		return missing, nil, nil
	}
	if err != nil {
		return ManifestEntry{}, nil, errorf(ErrStaging, "staging: %s: %v", rel, err)
	}
	if rp, err := filepath.Rel(r.ws, src); err != nil || rp == ".." || strings.HasPrefix(rp, ".."+string(filepath.Separator)) {
		return ManifestEntry{}, nil, errorf(ErrStaging, "modified path escapes the workspace: %q", rel)
	}
	f, err := os.Open(src)
	if err != nil {
		return missing, nil, nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return missing, nil, nil
	}
	if st.Size() > maxStagedFile {
		return ManifestEntry{}, nil, errorf(ErrStaging, "modified file %q is larger than %d MB", rel, maxStagedFile>>20)
	}
	data, err := readAll(f, st.Size())
	if err != nil {
		return ManifestEntry{}, nil, errorf(ErrStaging, "staging: %s: %v", rel, err)
	}
	if len(data) > maxStagedFile {
		return ManifestEntry{}, nil, errorf(ErrStaging, "modified file %q is larger than %d MB", rel, maxStagedFile>>20)
	}
	return entry(bucketModified, rel, data, ms), data, nil
}

// readAll reads f to its end, at most maxStagedFile+1 bytes, into a buffer
// of the size it had when stat'ed (io.ReadAll would start at 512 bytes: a
// turn of many small files allocated ten times what it read).
func readAll(f io.Reader, size int64) ([]byte, error) {
	data := make([]byte, 0, min(size, maxStagedFile)+1)
	for len(data) <= maxStagedFile {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		n, err := f.Read(data[len(data):min(cap(data), maxStagedFile+1)])
		data = data[:len(data)+n]
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return nil, err
		}
	}
	return data, nil
}

// manifestJSON is json.MarshalIndent(es, "", "  ") — the original's
// json.dumps(manifest, indent=2) — written directly: the manifest has a
// row per staged file, and the generic encoder spent a seventh of a
// turn's CPU and a quarter of its allocations on it. TestManifestJSON
// holds it to MarshalIndent's bytes.
func manifestJSON(es []ManifestEntry) []byte {
	if len(es) == 0 {
		return []byte("[]")
	}
	size := 2
	for _, e := range es { // a row's keys, punctuation and numbers take under 170 bytes
		size += 170 + len(e.Bucket) + len(e.Path) + sha256.Size*2
	}
	b := make([]byte, 0, size)
	b = append(b, '[')
	for i, e := range es {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n  {\n    \"bucket\": "...)
		b = appendJSONString(b, e.Bucket)
		b = append(b, ",\n    \"path\": "...)
		b = appendJSONString(b, e.Path)
		b = append(b, ",\n    \"sha256\": "...)
		if e.SHA256 == nil {
			b = append(b, "null"...)
		} else {
			b = appendJSONString(b, *e.SHA256)
		}
		b = append(b, ",\n    \"byte_size\": "...)
		b = strconv.AppendInt(b, e.ByteSize, 10)
		b = append(b, ",\n    \"written_at_ms\": "...)
		b = strconv.AppendInt(b, e.WrittenAtMS, 10)
		if e.Missing {
			b = append(b, ",\n    \"missing\": true"...)
		}
		b = append(b, "\n  }"...)
	}
	return append(b, "\n]"...)
}

// appendJSONString appends s as encoding/json writes it: printable ASCII
// that needs no escape as it is, anything else through encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func entry(bucket, p string, data []byte, ms int64) ManifestEntry {
	sum := sha256.Sum256(data)
	h := hex.EncodeToString(sum[:])
	return ManifestEntry{Bucket: bucket, Path: p, SHA256: &h, ByteSize: int64(len(data)), WrittenAtMS: ms}
}

// checkSegment: ids and artifact names become one path segment.
func checkSegment(label, v string) error {
	switch {
	case v == "":
		return errorf(ErrStaging, "%s must be a non-empty string", label)
	case v == "." || v == "..":
		return errorf(ErrStaging, "%s cannot be '.' or '..': %q", label, v)
	case strings.ContainsAny(v, "/\\\x00"):
		return errorf(ErrStaging, "%s must not contain path separators or null: %q", label, v)
	}
	return nil
}

// checkModified: a modified path is relative to the workspace and has no
// '..' segment.
func checkModified(rel string) error {
	if rel == "" || strings.ContainsRune(rel, 0) {
		return errorf(ErrStaging, "modified path must be a non-empty string without null: %q", rel)
	}
	p := strings.ReplaceAll(rel, "\\", "/")
	if path.IsAbs(p) || filepath.IsAbs(rel) {
		return errorf(ErrStaging, "modified path must be workspace-relative: %q", rel)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return errorf(ErrStaging, "modified path cannot contain '..': %q", rel)
		}
	}
	return nil
}

// NextTurn is the number the next turn of a step gets: one more than the
// highest staged turn under root/FLOW/STEP (1 when none).
func NextTurn(root, flowID, stepID string) int {
	if checkSegment("flow_id", flowID) != nil || checkSegment("step_id", stepID) != nil {
		return 1
	}
	ents, err := os.ReadDir(filepath.Join(root, flowID, stepID))
	if err != nil {
		return 1
	}
	best := 0
	for _, e := range ents {
		if n, err := strconv.Atoi(strings.TrimPrefix(e.Name(), "turn-")); err == nil && strings.HasPrefix(e.Name(), "turn-") && n > best {
			best = n
		}
	}
	return best + 1
}

// hasEvidence reports whether the turn staged any file.
func (t *Turn) hasEvidence() bool {
	for _, e := range t.Manifest {
		if !e.Missing {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
