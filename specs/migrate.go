package specs

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Migration upgrades a spec's IR version (`stratum migrate`, the original's
// `stratum-mcp migrate`): a chain of transforms from the spec's version to
// the target, each an edit of the text, so comments, order and formatting
// stay as written.
type Migration struct {
	From, To   string
	Transforms []string // what each step of the chain does, in order
	Output     []byte   // the migrated text (the source when From == To)
	Diff       string   // unified diff of source and Output ("" when equal)
}

// Errors of Migrate.
var (
	// ErrUnknownVersion: the spec's version or the target is no IR
	// version (the original's exit 3).
	ErrUnknownVersion = errors.New("unknown version")
	// ErrNoTransformPath: both versions are known but no chain of
	// transforms leads from one to the other (exit 3).
	ErrNoTransformPath = errors.New("no transform path")
)

// transform is one edge of the migration graph.
type transform struct {
	from, to, what string
}

// transforms are the original's registry: 0.3 is a backward-compatible
// superset of 0.2, so that upgrade bumps the version field only. There is
// none from 0.1 (its functions and steps differ), as in the original.
var transforms = []transform{
	{Version02, Version03, "v0.3 is a backward-compatible superset of v0.2; upgrade is a version-field bump only."},
}

// LatestMigration is the newest version a spec can be migrated to.
func LatestMigration() string {
	latest := ""
	for _, t := range transforms {
		if t.to > latest {
			latest = t.to
		}
	}
	return latest
}

// Migrate upgrades src to version to ("" = LatestMigration). The source
// must be a valid spec (a *Diagnostics error otherwise) and so must the
// result; compile compiles their expressions (see Parse).
func Migrate(file string, src []byte, to string, compile ExprCompiler) (*Migration, error) {
	if to == "" {
		to = LatestMigration()
	}
	from, node, err := versionNode(src)
	if err != nil {
		return nil, err
	}
	if !knownVersion(from) {
		return nil, fmt.Errorf("%w %q; known: %s", ErrUnknownVersion, from, strings.Join(knownVersions, ", "))
	}
	if !knownVersion(to) {
		return nil, fmt.Errorf("%w %q; known: %s", ErrUnknownVersion, to, strings.Join(knownVersions, ", "))
	}
	m := &Migration{From: from, To: to, Output: src}
	if from == to {
		return m, nil
	}
	chain := walkTransforms(from, to)
	if chain == nil {
		return nil, fmt.Errorf("%w from %s to %s", ErrNoTransformPath, from, to)
	}
	if _, ds := Parse(file, src, compile); ds.HasErrors() {
		return nil, ds.Errors()
	}
	out := src
	for _, t := range chain {
		out = setVersion(out, node, t.to)
		m.Transforms = append(m.Transforms, t.from+" -> "+t.to+": "+t.what)
	}
	if _, ds := Parse(file, out, compile); ds.HasErrors() {
		return nil, fmt.Errorf("internal error: the migration produced an invalid spec (target v%s): %w", to, ds.Errors())
	}
	m.Output = out
	m.Diff = unifiedDiff(file, string(src), string(out))
	return m, nil
}

func knownVersion(v string) bool { return slices.Contains(knownVersions, v) }

// walkTransforms is the shortest chain from one version to another (nil
// when there is none), breadth first as the original.
func walkTransforms(from, to string) []transform {
	type path struct {
		at    string
		chain []transform
	}
	queue := []path{{at: from}}
	seen := map[string]bool{from: true}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, t := range transforms {
			if t.from != p.at {
				continue
			}
			chain := append(append([]transform(nil), p.chain...), t)
			if t.to == to {
				return chain
			}
			if !seen[t.to] {
				seen[t.to] = true
				queue = append(queue, path{at: t.to, chain: chain})
			}
		}
	}
	return nil
}

// versionNode finds the top-level version scalar of src.
func versionNode(src []byte) (string, *yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return "", nil, fmt.Errorf("invalid YAML: %v", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return "", nil, errors.New("spec root must be a mapping")
	}
	root := doc.Content[0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "version" {
			v := root.Content[i+1]
			if v.Kind != yaml.ScalarNode || v.Tag != "!!str" {
				return "", nil, errors.New("the spec's version must be a string (\"0.2\")")
			}
			return v.Value, v, nil
		}
	}
	return "", nil, errors.New("the spec has no version")
}

// setVersion replaces the version scalar n of src by v, in the scalar's
// quoting style (a plain 0.3 would read as a number, so plain becomes
// double-quoted).
func setVersion(src []byte, n *yaml.Node, v string) []byte {
	lines := strings.SplitAfter(string(src), "\n")
	li := n.Line - 1
	if li < 0 || li >= len(lines) {
		return src
	}
	line := []rune(lines[li])
	col := n.Column - 1
	width := len([]rune(n.Value))
	repl := `"` + v + `"`
	switch n.Style {
	case yaml.DoubleQuotedStyle:
		width += 2
	case yaml.SingleQuotedStyle:
		width += 2
		repl = "'" + v + "'"
	case 0:
	default:
		return src
	}
	if col < 0 || col+width > len(line) {
		return src
	}
	lines[li] = string(line[:col]) + repl + string(line[col+width:])
	n.Value = v
	if n.Style == 0 {
		n.Style = yaml.DoubleQuotedStyle
	}
	return []byte(strings.Join(lines, ""))
}

// unifiedDiff is a unified diff of two texts with the same number of lines
// (what the version transforms produce), three lines of context, labelled
// like the original's ("FILE (before)", "FILE (after)").
func unifiedDiff(label, a, b string) string {
	if a == b {
		return ""
	}
	al, bl := splitLines(a), splitLines(b)
	if len(al) != len(bl) {
		return wholeDiff(label, al, bl)
	}
	var changed []int
	for k := range al {
		if al[k] != bl[k] {
			changed = append(changed, k)
		}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s (before)\n+++ %s (after)\n", label, label)
	for h := 0; h < len(changed); {
		// A hunk: changes less than 7 lines apart share their context.
		last := h
		for last+1 < len(changed) && changed[last+1]-changed[last] <= 6 {
			last++
		}
		start, stop := max(0, changed[h]-3), min(len(al), changed[last]+4)
		fmt.Fprintf(&out, "@@ -%d,%d +%d,%d @@\n", start+1, stop-start, start+1, stop-start)
		for k := start; k < stop; {
			if al[k] == bl[k] {
				out.WriteString(" " + withNL(al[k]))
				k++
				continue
			}
			run := k
			for run < stop && al[run] != bl[run] {
				run++
			}
			for r := k; r < run; r++ {
				out.WriteString("-" + withNL(al[r]))
			}
			for r := k; r < run; r++ {
				out.WriteString("+" + withNL(bl[r]))
			}
			k = run
		}
		h = last + 1
	}
	return out.String()
}

func wholeDiff(label string, a, b []string) string {
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s (before)\n+++ %s (after)\n@@ -1,%d +1,%d @@\n", label, label, len(a), len(b))
	for _, l := range a {
		out.WriteString("-" + withNL(l))
	}
	for _, l := range b {
		out.WriteString("+" + withNL(l))
	}
	return out.String()
}

func withNL(s string) string {
	if strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}

// splitLines splits after each newline, without the empty piece after a
// final newline.
func splitLines(s string) []string {
	out := strings.SplitAfter(s, "\n")
	if n := len(out); n > 0 && out[n-1] == "" {
		out = out[:n-1]
	}
	return out
}
