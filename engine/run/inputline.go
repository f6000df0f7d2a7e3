package run

import "strings"

// ParseInputLine builds a flow's inputs from one line of NAME=VALUE fields
// (what the TUI's run dialog takes): fields are separated by spaces outside
// double quotes and brackets, and each is parsed by ParseInput, so a value
// is JSON when it is valid JSON and a plain string otherwise; quote a value
// with spaces as a JSON string (name="a b").
func ParseInputLine(line string) (map[string]any, error) {
	return ParseInputs(splitFields(line), "")
}

// splitFields splits on spaces outside double quotes and brackets.
func splitFields(s string) []string {
	var out []string
	var cur strings.Builder
	depth, inStr, esc := 0, false, false
	for _, r := range s {
		switch {
		case esc:
			esc = false
		case inStr && r == '\\':
			esc = true
		case r == '"':
			inStr = !inStr
		case !inStr && (r == '[' || r == '{'):
			depth++
		case !inStr && (r == ']' || r == '}'):
			depth--
		case !inStr && depth <= 0 && (r == ' ' || r == '\t'):
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
			continue
		}
		cur.WriteRune(r)
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}
