package specs

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// seedBlock is one ```yaml block of a seed document.
type seedBlock struct {
	file string
	line int // line of the first YAML line
	src  string
}

func seedBlocks(t *testing.T) []seedBlock {
	t.Helper()
	dir := filepath.Join("..", "..", "shared", "seeds")
	files, _ := filepath.Glob(filepath.Join(dir, "*.txt"))
	if len(files) == 0 {
		t.Skipf("no seeds in %s", dir)
	}
	var out []seedBlock
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var cur *seedBlock
		var b strings.Builder
		n := 0
		for sc.Scan() {
			n++
			l := sc.Text()
			switch {
			case cur == nil && strings.TrimSpace(l) == "```yaml":
				cur = &seedBlock{file: filepath.Base(f), line: n + 1}
				b.Reset()
			case cur != nil && strings.TrimSpace(l) == "```":
				cur.src = b.String()
				out = append(out, *cur)
				cur = nil
			case cur != nil:
				b.WriteString(l)
				b.WriteByte('\n')
			}
		}
	}
	return out
}

var seedVersionRe = regexp.MustCompile(`(?m)^version:`)

// seedExpectations lists the complete seed specs that are invalid by the
// original's own rules, keyed by "<seed file>:<line>", with the code we
// must report.
var seedExpectations = map[string]string{
	// README "Workflows" example: a workflow block with no flows at all. The
	// original raises "cannot determine entry flow" for it (upstream §3.6),
	// and so do we.
	"002_4d5d0c949dd40c70.txt:901": CodeWorkflowEntry,
}

func TestSeedSpecs(t *testing.T) {
	blocks := seedBlocks(t)
	complete := 0
	for _, blk := range blocks {
		if !seedVersionRe.MatchString(blk.src) {
			continue // a fragment, not a spec
		}
		complete++
		key := fmt.Sprintf("%s:%d", blk.file, blk.line)
		t.Run(key, func(t *testing.T) {
			spec, ds := Parse(key, []byte(blk.src), testCompile)
			if want, ok := seedExpectations[key]; ok {
				if spec != nil {
					t.Fatalf("seed spec accepted; want %s", want)
				}
				found := false
				for _, d := range ds {
					found = found || d.Code == want
				}
				if !found {
					t.Fatalf("want %s, got:\n%s", want, dumpDiags(ds))
				}
				return
			}
			if spec == nil || ds.HasErrors() {
				t.Fatalf("seed spec rejected:\n%s\n%s", dumpDiags(ds), blk.src)
			}
		})
	}
	if complete < 3 {
		t.Errorf("found only %d complete specs in the seeds", complete)
	}
}
