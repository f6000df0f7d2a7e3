package py

import (
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// The ensure builtins of the original's newer releases that check a
// change as a whole: vocabulary_compliance (rejected words in the changed
// files) and plan_completion (a plan's items against the changed files).
// Both answer True or fail with a list of violations (Violations), which
// the ensure loop reports one by one, as the original does.

// Violations returns the error of a builtin that found violations: the
// original raises ValueError([…]) and its ensure loop reports each message
// as one violation.
func Violations(list []string) error {
	return &Error{msg: strings.Join(list, "; "), list: list}
}

// List returns the violations of an error made by Violations (nil for any
// other error).
func (e *Error) List() []string { return e.list }

var identifierRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// vocabEntry is one canonical word of a vocabulary file.
type vocabEntry struct {
	canonical string
	reject    []string
	reason    string
}

// vocabularyCompliance is vocabulary_compliance(path, files_changed,
// git_fallback=False, base='HEAD'): path is a vocabulary YAML file
// ({canonical: {reject: [alias…], reason: "…"}}); every whole-word,
// case-sensitive use of a rejected alias in a changed file is a violation.
// A missing or empty vocabulary, or no changed files, is True. Paths are
// confined to the root like file_exists'. Arguments: the written ones, then
// the root.
func vocabularyCompliance(w *Work, a []any) (any, error) {
	root := a[len(a)-1]
	a = a[:len(a)-1]
	p, err := pathArg("vocabulary_compliance", a[0])
	if err != nil {
		return nil, err
	}
	vocab, err := loadVocabulary(w, p, root)
	if err != nil || len(vocab) == 0 {
		return err == nil, err
	}
	files, err := stringList("vocabulary_compliance", "files_changed", a[1])
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		if len(a) > 2 && Truth(a[2]) {
			return nil, Errorf("vocabulary_compliance(): git_fallback is not supported: expressions never run processes; pass the changed files in files_changed")
		}
		return true, nil
	}
	seen := map[string]bool{}
	var out []string
	for _, f := range files {
		norm := filepath.Clean(f)
		if seen[norm] {
			continue
		}
		seen[norm] = true
		vs, err := scanVocabulary(w, norm, root, vocab)
		if err != nil {
			return nil, err
		}
		out = append(out, vs...)
	}
	if len(out) > 0 {
		return nil, Violations(out)
	}
	return true, nil
}

// loadVocabulary reads and checks a vocabulary file as the original does;
// a problem with it is one violation ("vocabulary.yaml schema error: …").
func loadVocabulary(w *Work, p string, root any) ([]vocabEntry, error) {
	f := openConfined(p, root)
	if f == nil {
		return nil, nil
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil || len(data) > MaxFileBytes {
		return nil, Violations([]string{fmt.Sprintf("vocabulary.yaml malformed: cannot read %s", p)})
	}
	if err := w.spendBytes(len(data)); err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, Violations([]string{"vocabulary.yaml malformed: " + err.Error()})
	}
	if doc.Kind == 0 || len(doc.Content) == 0 || isYAMLNull(doc.Content[0]) {
		return nil, nil
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode {
		return nil, schemaError("top-level must be a mapping")
	}
	var vocab []vocabEntry
	for i := 0; i+1 < len(top.Content); i += 2 {
		e, err := vocabularyEntry(top.Content[i], top.Content[i+1])
		if err != nil {
			return nil, err
		}
		vocab = append(vocab, e)
	}
	return vocab, crossCheckVocabulary(vocab)
}

func schemaError(format string, args ...any) error {
	return Violations([]string{"vocabulary.yaml schema error: " + fmt.Sprintf(format, args...)})
}

func isYAMLNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// vocabularyEntry checks one canonical: entry of a vocabulary file.
func vocabularyEntry(k, v *yaml.Node) (vocabEntry, error) {
	if k.Kind != yaml.ScalarNode || k.Tag != "!!str" || !identifierRe.MatchString(k.Value) {
		return vocabEntry{}, schemaError("canonical name %s must match identifier syntax (letters, digits, underscore; starts with letter or underscore)", ReprString(k.Value))
	}
	e := vocabEntry{canonical: k.Value}
	name := ReprString(k.Value)
	if v.Kind != yaml.MappingNode {
		return e, schemaError("entry for %s must be a mapping, got %s", name, yamlTypeName(v))
	}
	var unknown []string
	var reject *yaml.Node
	for i := 0; i+1 < len(v.Content); i += 2 {
		switch key := v.Content[i].Value; key {
		case "reject":
			reject = v.Content[i+1]
		case "reason":
			r := v.Content[i+1]
			if !isYAMLNull(r) && (r.Kind != yaml.ScalarNode || r.Tag != "!!str") {
				return e, schemaError("reason for %s must be a string", name)
			}
			if !isYAMLNull(r) {
				e.reason = r.Value
			}
		default:
			unknown = append(unknown, key)
		}
	}
	if len(unknown) > 0 {
		return e, schemaError("entry for %s has unknown fields: %s. Allowed: ['reason', 'reject']", name, ReprStrings(sortedCopy(unknown)))
	}
	if reject == nil || reject.Kind != yaml.SequenceNode || len(reject.Content) == 0 {
		return e, schemaError("entry for %s must have non-empty 'reject' list", name)
	}
	for _, an := range reject.Content {
		if an.Kind != yaml.ScalarNode || an.Tag != "!!str" || !identifierRe.MatchString(an.Value) {
			return e, schemaError("alias %s in %s must match identifier syntax", ReprString(an.Value), name)
		}
		if an.Value == e.canonical {
			return e, schemaError("canonical %s cannot reject itself", name)
		}
		e.reject = append(e.reject, an.Value)
	}
	return e, nil
}

// crossCheckVocabulary: no alias is also a canonical, and no alias is
// rejected by two canonicals.
func crossCheckVocabulary(vocab []vocabEntry) error {
	canon := map[string]bool{}
	for _, e := range vocab {
		canon[e.canonical] = true
	}
	owner := map[string]string{}
	for _, e := range vocab {
		for _, a := range e.reject {
			if canon[a] {
				return schemaError("%s is both a canonical and a rejected alias for %s", ReprString(a), ReprString(e.canonical))
			}
			if prev, ok := owner[a]; ok {
				return schemaError("alias %s is rejected by multiple canonicals (%s, %s)", ReprString(a), prev, e.canonical)
			}
			owner[a] = e.canonical
		}
	}
	return nil
}

// scanVocabulary reports the uses of rejected aliases in one file, line by
// line, in the vocabulary's order. A missing file, or one larger than
// MaxFileBytes, has none.
func scanVocabulary(w *Work, p string, root any, vocab []vocabEntry) ([]string, error) {
	f := openConfined(p, root)
	if f == nil {
		return nil, nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() > MaxFileBytes {
		return nil, nil
	}
	if err := w.spendBytes(int(st.Size()) * (1 + countAliases(vocab))); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, nil
	}
	text := strings.ToValidUTF8(string(data), "\uFFFD")
	var out []string
	for i, line := range splitLines(text) {
		for _, e := range vocab {
			for _, alias := range e.reject {
				for n := wordCount(line, alias); n > 0; n-- {
					msg := fmt.Sprintf("vocabulary violation: %s:%d uses %s — canonical is %s", p, i+1, ReprString(alias), ReprString(e.canonical))
					if e.reason != "" {
						msg += " (reason: " + e.reason + ")"
					}
					out = append(out, msg)
				}
			}
		}
	}
	return out, nil
}

func countAliases(vocab []vocabEntry) int {
	n := 0
	for _, e := range vocab {
		n += len(e.reject)
	}
	return n
}

// wordCount counts the whole-word occurrences of word in s (Python's \b:
// a word character is a Unicode letter, digit or underscore).
func wordCount(s, word string) int {
	n := 0
	for i := 0; ; {
		j := strings.Index(s[i:], word)
		if j < 0 {
			return n
		}
		start, end := i+j, i+j+len(word)
		if !wordBefore(s, start) && !wordAfter(s, end) {
			n++
		}
		i = start + 1
	}
}

func isWordRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

func wordBefore(s string, i int) bool {
	r, size := utf8.DecodeLastRuneInString(s[:i])
	return size > 0 && isWordRune(r)
}

func wordAfter(s string, i int) bool {
	r, size := utf8.DecodeRuneInString(s[i:])
	return size > 0 && isWordRune(r)
}

// splitLines is Python's str.splitlines().
func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch r {
		case '\n', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
			out = append(out, s[start:i])
			start = i + size
		case '\r':
			out = append(out, s[start:i])
			if i+1 < len(s) && s[i+1] == '\n' {
				size = 2
			}
			start = i + size
		}
		i += size
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

func yamlTypeName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "list"
	case yaml.MappingNode:
		return "dict"
	}
	switch n.Tag {
	case "!!int":
		return "int"
	case "!!float":
		return "float"
	case "!!bool":
		return "bool"
	case "!!null":
		return "NoneType"
	}
	return "str"
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// stringList reads a list of strings argument (None is the empty list).
func stringList(fn, what string, v any) ([]string, error) {
	if v == nil {
		return nil, nil
	}
	l, ok := v.([]any)
	if !ok {
		return nil, Errorf("%s() %s must be a list, not %s", fn, what, typeName(v))
	}
	out := make([]string, 0, len(l))
	for _, x := range l {
		s, ok := x.(string)
		if !ok {
			return nil, Errorf("%s() %s must hold strings, not %s", fn, what, typeName(x))
		}
		out = append(out, s)
	}
	return out, nil
}
