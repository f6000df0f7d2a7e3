package e2e

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// The README is short and links to reference documents kept beside their
// code (README, "Where documentation goes"). TestDocLinks keeps those links
// honest: every relative link in README.md and in every other Markdown
// document of the repository resolves to a file or directory of the
// repository and, with a #fragment, to a heading of the target document.

// docSkip are the Markdown files that are not documentation of this
// repository: test fixtures, and the files `stratum install` writes into a
// user's project (their links would be relative to that project).
var docSkip = []string{"testdata/", "engine/mcp/assets/"}

func TestDocLinks(t *testing.T) {
	root := repoRoot(t)
	docs, err := markdownDocs(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) < 10 {
		t.Fatalf("found %d Markdown documents under %s, want the README and its reference documents", len(docs), root)
	}
	links := 0
	for _, doc := range docs {
		problems, n, err := checkDocLinks(root, doc)
		if err != nil {
			t.Fatal(err)
		}
		links += n
		for _, p := range problems {
			t.Error(p)
		}
	}
	if links < 50 {
		t.Errorf("checked %d relative links, want the README's and the reference documents' (at least 50)", links)
	}
}

// TestDocLinksFindsBrokenOnes: the checker reports a missing file, a missing
// heading in another document and in the same one, and a link that leaves
// the repository; it accepts what GitHub resolves.
func TestDocLinksFindsBrokenOnes(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("sub/REF.md", "# Ref\n\n## `stratum gate`\n\n## Who may decide?\n\n## Who may decide?\n")
	write("README.md", strings.Join([]string{
		"# Top", "",
		"[ok](sub/REF.md) [ok](sub/REF.md#stratum-gate) [ok](sub/REF.md#who-may-decide-1) [ok](#top) [ok](sub/)",
		"[web](https://example.com/x.md#nope) `[code](missing.md)`",
		"```", "[fenced](missing.md)", "```",
		"[gone](sub/MISSING.md) [bad anchor](sub/REF.md#stratum-run) [bad self](#bottom) [out](../x.md)",
	}, "\n"))
	problems, n, err := checkDocLinks(root, "README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n != 9 {
		t.Errorf("checked %d links, want 9 (none in code or absolute)", n)
	}
	want := []string{"sub/MISSING.md", "sub/REF.md#stratum-run", "#bottom", "../x.md"}
	if len(problems) != len(want) {
		t.Fatalf("problems = %q, want one for each of %q", problems, want)
	}
	for i, w := range want {
		if !strings.Contains(problems[i], "("+w+")") {
			t.Errorf("problem %d = %q, want it about %s", i, problems[i], w)
		}
	}
}

func TestHeadingAnchor(t *testing.T) {
	for _, c := range []struct{ heading, want string }{
		{"`stratum run SPEC` — execute a flow in-process", "stratum-run-spec--execute-a-flow-in-process"},
		{"In CI: `stratum run`", "in-ci-stratum-run"},
		{"15. Fan-out: `decompose` and `parallel_dispatch` (0.3)", "15-fan-out-decompose-and-parallel_dispatch-03"},
		{"`approver: human` and who may decide", "approver-human-and-who-may-decide"},
		{"Stratum's extensions", "stratums-extensions"},
		{"Policies and `policy_fallback`", "policies-and-policy_fallback"},
		{"[Linked](x.md) *heading*", "linked-heading"},
	} {
		if got := headingAnchor(c.heading); got != c.want {
			t.Errorf("headingAnchor(%q) = %q, want %q", c.heading, got, c.want)
		}
	}
}

// markdownDocs lists the repository's Markdown documents, relative to root
// with forward slashes.
func markdownDocs(root string) ([]string, error) {
	var docs []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, root+string(filepath.Separator)))
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && p != root {
				return filepath.SkipDir
			}
			for _, s := range docSkip {
				if rel+"/" == s {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if strings.HasSuffix(rel, ".md") {
			docs = append(docs, rel)
		}
		return nil
	})
	return docs, err
}

var (
	linkRE       = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	inlineCodeRE = regexp.MustCompile("`[^`]*`")
)

// checkDocLinks checks the relative links of doc (relative to root) and
// returns a problem per broken one and the number it checked. Links inside
// code (fenced blocks, inline code) and absolute URLs are not checked.
func checkDocLinks(root, doc string) (problems []string, checked int, err error) {
	lines, err := readLines(filepath.Join(root, filepath.FromSlash(doc)))
	if err != nil {
		return nil, 0, err
	}
	fence := false
	for i, line := range lines {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
			continue
		}
		if fence {
			continue
		}
		for _, m := range linkRE.FindAllStringSubmatch(inlineCodeRE.ReplaceAllString(line, ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			if msg := checkLink(root, doc, target); msg != "" {
				problems = append(problems, fmt.Sprintf("%s:%d: (%s) %s", doc, i+1, target, msg))
			}
		}
	}
	return problems, checked, nil
}

// checkLink says what is wrong with one relative link of doc, or "".
func checkLink(root, doc, target string) string {
	path, anchor, _ := strings.Cut(target, "#")
	file := doc
	if path != "" {
		file = filepath.ToSlash(filepath.Join(filepath.Dir(doc), filepath.FromSlash(path)))
		if file == ".." || strings.HasPrefix(file, "../") {
			return "points outside the repository"
		}
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(file))); err != nil {
			return "no such file in the repository"
		}
	}
	if anchor == "" {
		return ""
	}
	if !strings.HasSuffix(file, ".md") {
		return "an anchor into a file that is not Markdown"
	}
	anchors, err := docAnchors(filepath.Join(root, filepath.FromSlash(file)))
	if err != nil {
		return err.Error()
	}
	if !anchors[anchor] {
		return fmt.Sprintf("%s has no heading with anchor #%s", file, anchor)
	}
	return ""
}

// docAnchors is the set of anchors GitHub gives the headings of a Markdown
// file: headingAnchor of each, with -1, -2, … on repeats.
func docAnchors(path string) (map[string]bool, error) {
	lines, err := readLines(path)
	if err != nil {
		return nil, err
	}
	anchors := map[string]bool{}
	seen := map[string]int{}
	fence := false
	for _, line := range lines {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
			continue
		}
		if fence || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimLeft(line, "#")
		if !strings.HasPrefix(text, " ") {
			continue
		}
		a := headingAnchor(strings.TrimSpace(text))
		if n := seen[a]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors, nil
}

var mdLinkTextRE = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

// headingAnchor is GitHub's anchor for a heading: its text (links reduced to
// their text, Markdown marks dropped) in lower case, every character but
// letters, digits, spaces, hyphens and underscores removed, spaces made
// hyphens.
func headingAnchor(heading string) string {
	text := mdLinkTextRE.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func readLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines, sc.Err()
}
