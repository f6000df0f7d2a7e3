package tui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/stratum-go/stratum/review"
)

// A Go program's review (review.PendingReview with Library set) is read as
// text, not JSON: its question, what opened it, its numbered options and
// its artifacts, each value as key: value words that wrap on spaces. At
// 80×24 the question, the trigger, every option and the first line of each
// artifact fit without scrolling for up to five options: reviewLines folds
// what does not fit (artifacts to one line each, then options to one line
// each) and enter unfolds it all.

// kv is one key of a JSON object, in the order the object was written.
type kv struct {
	key string
	val any
}

// object is a JSON object with its keys in order.
type object []kv

// readable turns v into the values readText renders: JSON objects become
// objects (keys in their written order; a Go map's sorted), arrays []any,
// numbers json.Number. A value that is not JSON stays as its text.
func readable(v any) any {
	var raw []byte
	switch x := v.(type) {
	case json.RawMessage:
		raw = x
	case nil, string, bool:
		return x
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return fmt.Sprint(x)
		}
		raw = b
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	out, err := decodeOrdered(dec)
	if err != nil {
		return string(raw)
	}
	return out
}

// decodeOrdered reads one JSON value from dec, keeping objects' key order.
func decodeOrdered(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return tok, nil
	}
	switch d {
	case '{':
		o := object{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := decodeOrdered(dec)
			if err != nil {
				return nil, err
			}
			o = append(o, kv{fmt.Sprint(k), v})
		}
		_, err = dec.Token()
		return o, err
	case '[':
		a := []any{}
		for dec.More() {
			v, err := decodeOrdered(dec)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err = dec.Token()
		return a, err
	}
	return nil, fmt.Errorf("unexpected %v", d)
}

// inlineText is v on one line: an object's pairs as `key: value` joined by
// ` · ` (nested ones in parentheses), an array's items by commas, a
// string as its text (its first line and how many more, when it has
// several). Raw: pass it through clean.
func inlineText(v any, nested bool) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		lines := strings.Split(strings.TrimSuffix(x, "\n"), "\n")
		if len(lines) > 1 {
			return fmt.Sprintf("%s (+%d lines)", lines[0], len(lines)-1)
		}
		return x
	case object:
		if len(x) == 0 {
			return "{}"
		}
		parts := make([]string, len(x))
		for i, p := range x {
			parts[i] = p.key + ": " + inlineText(p.val, true)
		}
		if nested {
			return "(" + strings.Join(parts, ", ") + ")"
		}
		return strings.Join(parts, " · ")
	case []any:
		if len(x) == 0 {
			return "[]"
		}
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = inlineText(e, true)
		}
		if nested {
			return "[" + strings.Join(parts, ", ") + "]"
		}
		return strings.Join(parts, ", ")
	}
	return fmt.Sprint(v)
}

// blockLines renders `label: v` for width at indent: on one line (wrapped
// on spaces, continuation lines indented) when v is a single-line value or
// its inline form fits one line; else the label alone, then a multi-line
// string's lines, an object's keys or an array's items below it.
func blockLines(label string, v any, width int, indent string) []string {
	in := indent + "  "
	switch x := v.(type) {
	case string:
		if !strings.Contains(strings.TrimSuffix(x, "\n"), "\n") {
			return hangLines(indent, clean(label+": "+x), in+"  ", width)
		}
		out := []string{truncate(indent+clean(label)+":", width)}
		for _, l := range strings.Split(strings.TrimSuffix(x, "\n"), "\n") {
			out = append(out, hangLines(in, clean(l), in+"  ", width)...)
		}
		return out
	case object, []any:
		line := clean(label + ": " + inlineText(v, false))
		if ansi.StringWidth(indent+line) <= width {
			return []string{indent + line}
		}
		out := []string{truncate(indent+clean(label)+":", width)}
		if o, ok := x.(object); ok {
			for _, p := range o {
				out = append(out, blockLines(p.key, p.val, width, in)...)
			}
			return out
		}
		for _, e := range x.([]any) {
			out = append(out, hangLines(in+"- ", clean(inlineText(e, true)), in+"  ", width)...)
		}
		return out
	}
	return hangLines(indent, clean(label+": "+inlineText(v, false)), in+"  ", width)
}

// hangLines wraps text on word boundaries (a word longer than a line is
// broken) for width, the first line after prefix, the others after hang.
// text is plain (cleaned, unstyled).
func hangLines(prefix, text, hang string, width int) []string {
	lines := wordWrap(text, max(8, width-ansi.StringWidth(prefix)), max(8, width-ansi.StringWidth(hang)))
	for i := range lines {
		if i == 0 {
			lines[i] = prefix + lines[i]
		} else {
			lines[i] = hang + lines[i]
		}
	}
	return lines
}

// wordWrap breaks plain text into lines of at most first cells (the first
// line) and rest cells (the others), at spaces; a word longer than a line
// is cut where the line ends. The text's indentation is kept.
func wordWrap(text string, first, rest int) []string {
	var lines []string
	var line strings.Builder
	lw, limit, words := 0, first, 0 // the line's width, its limit, its words
	if indent := text[:len(text)-len(strings.TrimLeft(text, " "))]; len(indent) < first/2 {
		line.WriteString(indent)
		lw = len(indent)
	}
	flush := func() {
		lines = append(lines, line.String())
		line.Reset()
		lw, limit, words = 0, rest, 0
	}
	for _, w := range strings.Fields(text) {
		ww := ansi.StringWidth(w)
		if words > 0 && lw+1+ww > limit {
			flush()
		}
		for words == 0 && lw+ww > limit {
			// A word longer than a whole line: cut it where the line ends.
			head := ansi.Truncate(w, limit-lw, "")
			line.WriteString(head)
			w = w[len(head):]
			ww = ansi.StringWidth(w)
			flush()
		}
		if w == "" {
			continue
		}
		if words > 0 {
			line.WriteByte(' ')
			lw++
		}
		line.WriteString(w)
		lw += ww
		words++
	}
	if words > 0 || len(lines) == 0 {
		lines = append(lines, line.String())
	}
	return lines
}

// reviewView is a Go program's review laid out for a width and a room:
// its lines, and whether folding changes them (it does not fit the room
// unfolded: enter unfolds and folds it).
type reviewView struct {
	lines    []string
	foldable bool
}

// reviewLines lays out Go program's review r for width in at most room
// rows (room ≤ 0: no limit): the question (prefixed by asker, when set),
// what opened it and its deadline (how long it has waited is on the
// Gates pane's list row and the dialog's flow line), its numbered options (or the type of
// the value it takes) and its artifacts. Everything, wrapped, when it fits
// or expanded is set; else artifacts fold to their first line, then (in
// the Gates pane) options to one line each. inPane is set for the Gates pane, whose keys
// the headings name (not a dialog, where enter continues).
func (c *common) reviewLines(r review.PendingReview, width, room int, expanded, inPane bool, asker string) reviewView {
	now := c.now()
	head := wrapLines(clean(asker+r.Question), width)
	meta := "trigger " + r.Trigger + " · " + deadlineText(r, now)
	if r.Approver == review.HumanApprover {
		meta += " · approver: " + approverText(r.Approver)
	}
	head = append(head, wrapLines(clean(meta), width)...)
	if len(r.Options) == 0 {
		head = append(head, wrapLines(clean("value: any JSON value of the type "+inlineText(readable(r.Schema), false)), width)...)
	}
	// build lays the review out with its options on one line each
	// (oneLine) or wrapped, and its artifacts folded to their first line
	// except those unfolded.
	keys := sortedKeys(r.Artifacts.Values)
	build := func(oneLine bool, unfolded map[string]bool) []string {
		out := append([]string(nil), head...)
		if n := len(r.Options); n > 0 {
			title := "Options"
			if inPane {
				title = fmt.Sprintf("Options (%s, then 1–%d)", keyName(c.keys.Approve), n)
			}
			out = append(out, c.st.Header.Render(truncate(title, width)))
			for i, o := range r.Options {
				prefix := fmt.Sprintf("  %d. ", i+1)
				text := clean(inlineText(readable(o), false))
				if oneLine {
					out = append(out, truncate(prefix+text, width))
					continue
				}
				out = append(out, hangLines(prefix, text, strings.Repeat(" ", len(prefix)), width)...)
			}
		}
		if len(keys) > 0 {
			title := "Artifacts"
			if inPane && len(unfolded) < len(keys) {
				title += " (" + keyName(c.keys.Open) + " expands)"
			}
			out = append(out, c.st.Header.Render(truncate(title, width)))
			for _, k := range keys {
				v := readable(r.Artifacts.Values[k])
				if unfolded[k] {
					out = append(out, blockLines(k, v, width, "  ")...)
					continue
				}
				out = append(out, truncate("  "+clean(k+": "+inlineText(v, false)), width))
			}
		}
		return out
	}
	all := map[string]bool{}
	for _, k := range keys {
		all[k] = true
	}
	full := build(false, all)
	if room <= 0 || len(full) <= room {
		return reviewView{lines: full}
	}
	if expanded {
		return reviewView{lines: full, foldable: true}
	}
	// Options first: wrapped if they fit with every artifact folded, else
	// (in the Gates pane, where enter shows them whole) one line each; then
	// unfold the artifacts, in order, that still fit. A dialog, where the
	// option is picked, keeps them whole and scrolls.
	oneLine := inPane && len(build(false, nil)) > room
	unfolded := map[string]bool{}
	n := len(build(oneLine, nil))
	for _, k := range keys {
		extra := len(blockLines(k, readable(r.Artifacts.Values[k]), width, "  ")) - 1
		if n+extra <= room {
			unfolded[k], n = true, n+extra
		}
	}
	return reviewView{lines: build(oneLine, unfolded), foldable: true}
}
