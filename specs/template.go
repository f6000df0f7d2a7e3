package specs

import (
	"encoding/json"
	"strconv"
	"strings"
)

// A pipeline stage's intent_template is rendered like the original's
// Python str.format: {name} is replaced by a value, {name[key]} and
// {name.key} read into it (a mapping's key, a list's index), {{ and }} are
// literal braces. A string is inserted as it is, anything else as JSON. A
// template that names something the values lack is used as written (the
// original's fallback), so a stage's prompt never fails to render.

// TemplateField is one replacement field of a template: the name it
// starts with and the keys that follow ({item[title]}: item, [title]).
type TemplateField struct {
	Name string
	Keys []string
	// Offset is the byte offset of the field's '{' in the template.
	Offset int
}

// TemplateFields returns the replacement fields of a template, and false
// when the template is not well formed (an unmatched brace): such a
// template is used as written.
func TemplateFields(tpl string) ([]TemplateField, bool) {
	var out []TemplateField
	for i := 0; i < len(tpl); i++ {
		switch tpl[i] {
		case '}':
			if i+1 < len(tpl) && tpl[i+1] == '}' {
				i++
				continue
			}
			return out, false
		case '{':
			if i+1 < len(tpl) && tpl[i+1] == '{' {
				i++
				continue
			}
			j := strings.IndexByte(tpl[i:], '}')
			if j < 0 {
				return out, false
			}
			f, ok := parseField(tpl[i+1 : i+j])
			if !ok {
				return out, false
			}
			f.Offset = i
			out = append(out, f)
			i += j
		}
	}
	return out, true
}

// parseField parses "name[key].attr…" (a conversion or format spec after
// '!' or ':' is ignored).
func parseField(s string) (TemplateField, bool) {
	if k := strings.IndexAny(s, "!:"); k >= 0 {
		s = s[:k]
	}
	end := strings.IndexAny(s, ".[")
	if end < 0 {
		end = len(s)
	}
	f := TemplateField{Name: s[:end]}
	if f.Name == "" || strings.ContainsAny(f.Name, "{ ") {
		return f, false
	}
	rest := s[end:]
	for rest != "" {
		switch rest[0] {
		case '.':
			k := strings.IndexAny(rest[1:], ".[")
			if k < 0 {
				k = len(rest) - 1
			}
			if k == 0 {
				return f, false
			}
			f.Keys = append(f.Keys, rest[1:1+k])
			rest = rest[1+k:]
		case '[':
			k := strings.IndexByte(rest, ']')
			if k <= 1 {
				return f, false
			}
			f.Keys = append(f.Keys, rest[1:k])
			rest = rest[k+1:]
		default:
			return f, false
		}
	}
	return f, true
}

// FormatTemplate renders tpl with vars (see TemplateFields). ok is false,
// and tpl returned as written, when a field names a value vars lack or
// the template is not well formed.
func FormatTemplate(tpl string, vars map[string]any) (string, bool) {
	fields, ok := TemplateFields(tpl)
	if !ok {
		return tpl, false
	}
	var b strings.Builder
	last := 0
	for _, f := range fields {
		v, ok := lookupField(vars, f)
		if !ok {
			return tpl, false
		}
		b.WriteString(unescapeBraces(tpl[last:f.Offset]))
		b.WriteString(TemplateText(v))
		last = f.Offset + strings.IndexByte(tpl[f.Offset:], '}') + 1
	}
	b.WriteString(unescapeBraces(tpl[last:]))
	return b.String(), true
}

func lookupField(vars map[string]any, f TemplateField) (any, bool) {
	v, ok := vars[f.Name]
	if !ok {
		return nil, false
	}
	for _, k := range f.Keys {
		switch x := v.(type) {
		case map[string]any:
			if v, ok = x[k]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

func unescapeBraces(s string) string {
	if !strings.ContainsAny(s, "{}") {
		return s
	}
	return strings.NewReplacer("{{", "{", "}}", "}").Replace(s)
}

// TemplateText is a value as a template (and a stage predicate's prev or
// result) sees it: a string as it is, anything else as JSON.
func TemplateText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return ""
	}
	return strings.TrimSuffix(b.String(), "\n")
}
