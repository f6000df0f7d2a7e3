package specs

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// TestReferenceExamples validates every ```yaml block of REFERENCE.md that is
// a whole spec (it has a version line): the reference never shows a spec that
// stratum refuses.
func TestReferenceExamples(t *testing.T) {
	f, err := os.Open("REFERENCE.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var (
		in, n  = false, 0
		start  int
		b      strings.Builder
		blocks int
	)
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case !in && line == "```yaml":
			in, start = true, n+1
			b.Reset()
		case in && line == "```":
			in = false
			src := b.String()
			if !strings.HasPrefix(src, "version:") {
				continue
			}
			blocks++
			if _, ds := Parse("REFERENCE.md", []byte(src), testCompile); len(ds) > 0 {
				t.Errorf("REFERENCE.md:%d: the example does not validate:\n%v", start, ds.Error())
			}
		case in:
			b.WriteString(line + "\n")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if blocks < 15 {
		t.Fatalf("found %d spec examples in REFERENCE.md, want at least 15", blocks)
	}
}
