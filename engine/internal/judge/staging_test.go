package judge

import (
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"
)

// The staged tree is the original's — artifacts/NAME.txt, modified/PATH
// (a snapshot), manifest.json — kept in one archive: the manifest, the
// files read back, tier 1 and a verifier's copy all see that tree.
func TestStagedTree(t *testing.T) {
	// zip's strict mode calls a name with '\' insecure; the tree keeps it.
	t.Setenv("GODEBUG", "zipinsecurepath=0")
	ws := t.TempDir()
	mustWrite(t, filepath.Join(ws, "src", "a.go"), "package a\n")
	if err := os.Symlink(filepath.Join("src", "a.go"), filepath.Join(ws, "link.go")); err != nil {
		t.Fatal(err)
	}
	modified := []string{"src/a.go", "./src/a.go", "src/gone.go", "link.go", "src"}
	want := map[string]string{"artifacts/report.txt": "collected 12\n12 passed\n", "artifacts/empty.txt": "",
		"modified/src/a.go": "package a\n", "modified/link.go": "package a\n"}
	if runtime.GOOS != "windows" { // a backslash is part of a file name here, as in the original
		mustWrite(t, filepath.Join(ws, `odd\name.go`), "odd\n")
		modified = append(modified, `odd\name.go`)
		want[`modified/odd\name.go`] = "odd\n"
	}
	clock := time.Unix(1_800_000_000, 0)
	turn, err := Stage(t.TempDir(), "f", "s", 1, map[string]string{"report": want["artifacts/report.txt"], "empty": ""}, modified, ws, func() time.Time { return clock })
	if err != nil {
		t.Fatal(err)
	}
	defer turn.Close()

	var got []string
	for _, e := range turn.Manifest {
		got = append(got, e.Bucket+"/"+e.Path+map[bool]string{true: " missing"}[e.Missing])
		if e.Missing != (e.SHA256 == nil) || e.WrittenAtMS != clock.UnixMilli() {
			t.Errorf("manifest entry %+v", e)
		}
	}
	wantManifest := []string{"artifacts/empty.txt", "artifacts/report.txt", "modified/src/a.go", "modified/./src/a.go",
		"modified/src/gone.go missing", "modified/link.go", "modified/src missing"}
	if runtime.GOOS != "windows" {
		wantManifest = append(wantManifest, `modified/odd\name.go`)
	}
	if !reflect.DeepEqual(got, wantManifest) {
		t.Fatalf("manifest %q\nwant %q", got, wantManifest)
	}
	if *turn.Manifest[2].SHA256 != *turn.Manifest[3].SHA256 {
		t.Error("a path given twice has two hashes")
	}

	for name, text := range want {
		if b, err := ReadStaged(turn.Dir, name); err != nil || string(b) != text {
			t.Errorf("%s = %q, %v; want %q", name, b, err, text)
		}
	}
	for _, name := range []string{"modified/src/gone.go", "modified/src", "src/a.go", "../s/turn-1/turn.zip"} {
		if b, err := ReadStaged(turn.Dir, name); err == nil {
			t.Errorf("%s staged: %q", name, b)
		}
	}
	mb, err := ReadStaged(turn.Dir, manifestName)
	if err != nil {
		t.Fatal(err)
	}
	var m []ManifestEntry
	if err := json.Unmarshal(mb, &m); err != nil || !reflect.DeepEqual(m, turn.Manifest) {
		t.Fatalf("manifest.json %s, %v", mb, err)
	}

	// A verifier's copy is the same tree, read-only; a change to it is seen.
	dir, err := readOnlyCopy(turn.Dir, turn.tree)
	if err != nil {
		t.Fatal(err)
	}
	defer removeCopy(dir)
	var files []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, filepath.ToSlash(rel))
			if info, _ := d.Info(); info.Mode().Perm()&0o222 != 0 {
				t.Errorf("%s is writable in the copy", rel)
			}
		}
		return err
	})
	wantFiles := []string{manifestName}
	for name := range want {
		wantFiles = append(wantFiles, name)
	}
	sort.Strings(files)
	sort.Strings(wantFiles)
	if !reflect.DeepEqual(files, wantFiles) {
		t.Fatalf("copy holds %q, want %q", files, wantFiles)
	}
	if st, err := os.Stat(filepath.Join(dir, "modified", "src")); err != nil || !st.IsDir() {
		t.Fatalf("modified/src in the copy: %v", err)
	}
	if d := tampered(turn.tree, dir); d != "" {
		t.Fatalf("an untouched copy differs at %s", d)
	}
	_ = os.Chmod(filepath.Join(dir, "artifacts"), 0o755)
	if err := os.Remove(filepath.Join(dir, "artifacts", "empty.txt")); err != nil {
		t.Fatal(err)
	}
	if d := tampered(turn.tree, dir); d != "artifacts/empty.txt" {
		t.Fatalf("a removed file: tampered = %q", d)
	}
}

// Tier 1 reads the staged tree as the original's path-rebound builtins
// read its staging directory.
func TestTier1ReadsTheStagedTree(t *testing.T) {
	ws := t.TempDir()
	mustWrite(t, filepath.Join(ws, "src", "a.go"), "package a\n")
	ps := preds(t, "cheap",
		`{id: t1, type: deterministic, statement: "file_contains('modified/src/a.go', 'package a')"}`,
		`{id: t2, type: deterministic, statement: "file_exists('artifacts/../manifest.json')"}`,
		`{id: t3, type: deterministic, statement: "file_exists('artifacts/./report.txt') and file_contains('artifacts/report.txt', '12 passed')"}`,
		`{id: f1, type: deterministic, statement: "file_exists('modified/src')"}`,
		`{id: f2, type: deterministic, statement: "file_exists('modified/src/gone.go')"}`,
		`{id: f3, type: deterministic, statement: "file_exists('artifacts/../../s/turn-1/turn.zip')"}`,
		`{id: f4, type: deterministic, statement: "file_contains('modified/src/a.go', 'package b')"}`,
	)
	r, err := Run(context.Background(), Request{FlowID: "f", StepID: "s", Predicates: ps, Stakes: "cheap",
		Artifacts: map[string]string{"report": "12 passed"}, Modified: []string{"src/a.go", "src/gone.go"}, Workspace: ws, Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range r.Predicates {
		if want := map[byte]string{'t': Met, 'f': NotMet}[p.ID[0]]; p.Verdict != want {
			t.Errorf("%s (%s) = %s, want %s", p.ID, p.Statement, p.Verdict, want)
		}
	}
}

func TestTreeRefusesAFileThatIsADirectory(t *testing.T) {
	w, err := newTreeWriter(filepath.Join(t.TempDir(), treeArchive), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer w.abort()
	if err := w.file("modified/x", []byte("a")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"modified/x/y", "modified"} {
		if err := w.file(name, []byte("b")); !isType(err, ErrStaging) || !strings.Contains(err.Error(), "both as a file and as a directory") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func mustWrite(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The manifest is written by hand for speed; it must be byte for byte what
// encoding/json writes (the original's json.dumps(manifest, indent=2)
// shape), whatever the paths hold.
func TestManifestJSON(t *testing.T) {
	sum := "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	var es []ManifestEntry
	for _, p := range []string{"out.txt", "src/a.go", `odd\name "quoted".go`, "<a&b>.txt", "é ü 日本.go", "tab\tnl\n\x01.go", "bad\xff.go", "line\u2028sep.go", ""} {
		es = append(es, ManifestEntry{Bucket: bucketModified, Path: p, SHA256: &sum, ByteSize: 12, WrittenAtMS: 1_800_000_000_123})
		es = append(es, ManifestEntry{Bucket: bucketModified, Path: p, WrittenAtMS: -1, Missing: true})
	}
	for _, c := range [][]ManifestEntry{{}, es[:1], es[1:2], es} {
		want, err := json.MarshalIndent(c, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if got := manifestJSON(c); string(got) != string(want) {
			t.Errorf("manifestJSON\n%s\nwant\n%s", got, want)
		}
	}
}

// readAll reads what io.ReadAll reads, and stops one byte past the cap.
func TestReadAll(t *testing.T) {
	for _, c := range []struct {
		text string
		size int64 // what stat said
	}{{"", 0}, {"abc", 3}, {"grown since stat", 4}, {"shrunk", 100}, {strings.Repeat("x", 5000), 5000}} {
		got, err := readAll(strings.NewReader(c.text), c.size)
		if err != nil || string(got) != c.text {
			t.Errorf("%.20q (size %d) = %.20q, %v", c.text, c.size, got, err)
		}
	}
	big := io.LimitReader(zeros{}, maxStagedFile+10)
	if got, err := readAll(big, 10); err != nil || len(got) != maxStagedFile+1 {
		t.Errorf("past the cap: %d bytes, %v", len(got), err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }
