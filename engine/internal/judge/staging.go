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
	"sync"
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

// Turn is one staged turn: Dir holds artifacts/NAME.txt, modified/PATH and
// manifest.json.
type Turn struct {
	N        int
	Dir      string
	Manifest []ManifestEntry
}

// maxStagedFile bounds one staged file (a modified file larger is refused).
const maxStagedFile = 64 << 20

// Stage writes one turn's evidence under root/FLOW/STEP/turn-N, N the
// first free number from turn on (a directory is never overwritten).
// Artifact names are single path segments; modified files are paths
// relative to workspace, copied from it (a path that leaves the workspace,
// also through a symlink, is refused).
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
	for _, b := range []string{bucketArtifacts, bucketModified} {
		if err := os.Mkdir(filepath.Join(t.Dir, b), 0o755); err != nil {
			return errorf(ErrStaging, "staging: %v", err)
		}
	}
	ms := now().UnixMilli()
	names := sortedKeys(artifacts)
	realWS, err := filepath.EvalSymlinks(workspace)
	if err != nil && len(modified) > 0 {
		return errorf(ErrStaging, "staging: workspace %s: %v", workspace, err)
	}
	// Creating files is what staging costs (a file system spends about a
	// millisecond on each under load): the files are written by a few
	// workers at once, and the manifest keeps the order (artifacts by
	// name, then the modified files as given).
	t.Manifest = make([]ManifestEntry, len(names)+len(modified))
	dirs := &dirSet{made: map[string]bool{filepath.Join(t.Dir, bucketModified): true}}
	err = parallel(len(t.Manifest), func(i int) error {
		if i < len(names) {
			data := []byte(artifacts[names[i]])
			if err := os.WriteFile(filepath.Join(t.Dir, bucketArtifacts, names[i]+".txt"), data, 0o644); err != nil {
				return errorf(ErrStaging, "staging: %v", err)
			}
			t.Manifest[i] = entry(bucketArtifacts, names[i]+".txt", data, ms)
			return nil
		}
		e, err := t.copyModified(realWS, modified[i-len(names)], ms, dirs)
		t.Manifest[i] = e
		return err
	})
	if err != nil {
		return err
	}
	data, _ := json.MarshalIndent(t.Manifest, "", "  ")
	if err := os.WriteFile(filepath.Join(t.Dir, "manifest.json"), data, 0o644); err != nil {
		return errorf(ErrStaging, "staging: %v", err)
	}
	return nil
}

// stagingWorkers write a turn's files at once.
const stagingWorkers = 8

// parallel runs f(0..n-1) on stagingWorkers goroutines and returns the
// first error (the others stop taking work).
func parallel(n int, f func(int) error) error {
	var (
		mu    sync.Mutex
		next  int
		first error
		wg    sync.WaitGroup
	)
	for range min(stagingWorkers, n) {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				stop := first != nil
				mu.Unlock()
				if stop || i >= n {
					return
				}
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return first
}

// dirSet creates the directories of the modified bucket once each.
type dirSet struct {
	mu   sync.Mutex
	made map[string]bool
}

func (d *dirSet) ensure(dir string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.made[dir] {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	d.made[dir] = true
	return nil
}

// copyModified snapshots one modified file; a file that is not there is
// recorded as missing.
func (t *Turn) copyModified(ws, rel string, ms int64, dirs *dirSet) (ManifestEntry, error) {
	missing := ManifestEntry{Bucket: bucketModified, Path: rel, WrittenAtMS: ms, Missing: true}
	src, err := filepath.EvalSymlinks(filepath.Join(ws, filepath.FromSlash(rel)))
	if errors.Is(err, fs.ErrNotExist) {
		return missing, nil
	}
	if err != nil {
		return ManifestEntry{}, errorf(ErrStaging, "staging: %s: %v", rel, err)
	}
	if r, err := filepath.Rel(ws, src); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return ManifestEntry{}, errorf(ErrStaging, "modified path escapes the workspace: %q", rel)
	}
	f, err := os.Open(src)
	if err != nil {
		return missing, nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return missing, nil
	}
	if st.Size() > maxStagedFile {
		return ManifestEntry{}, errorf(ErrStaging, "modified file %q is larger than %d MB", rel, maxStagedFile>>20)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return ManifestEntry{}, errorf(ErrStaging, "staging: %s: %v", rel, err)
	}
	dst := filepath.Join(t.Dir, bucketModified, filepath.FromSlash(rel))
	if err := dirs.ensure(filepath.Dir(dst)); err != nil {
		return ManifestEntry{}, errorf(ErrStaging, "staging: %v", err)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		return ManifestEntry{}, errorf(ErrStaging, "staging: %v", err)
	}
	return entry(bucketModified, rel, data, ms), nil
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
