package run

import "strings"

// shellSubstitute replaces the {name} placeholders of a shell command text
// (an agent's `shell:` template, run with sh -c) by their values, quoted for
// the place each one stands in: outside quotes the value becomes one
// single-quoted word, inside single quotes its own quotes are closed and
// reopened around an escaped quote, inside double quotes the characters sh
// still interprets there ($ ` " \) are escaped. Whatever a value holds — a
// directory named `proj;touch PWNED`, quotes, $(…) — it reaches the command
// as data, never as shell syntax.
func shellSubstitute(text string, vals map[string]string) string {
	const (
		plain = iota
		single
		double
	)
	var b strings.Builder
	state := plain
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c == '{' {
			if name, v, ok := placeholderAt(text[i:], vals); ok {
				switch state {
				case plain:
					b.WriteString(quoteSingle(v))
				case single:
					b.WriteString(strings.ReplaceAll(v, "'", `'\''`))
				case double:
					b.WriteString(escapeDouble(v))
				}
				i += len(name) + 1 // the loop's i++ steps over the closing brace
				continue
			}
		}
		b.WriteByte(c)
		switch state {
		case plain:
			switch c {
			case '\\':
				if i+1 < len(text) {
					i++
					b.WriteByte(text[i])
				}
			case '\'':
				state = single
			case '"':
				state = double
			}
		case single:
			if c == '\'' {
				state = plain
			}
		case double:
			switch c {
			case '\\':
				if i+1 < len(text) {
					i++
					b.WriteByte(text[i])
				}
			case '"':
				state = plain
			}
		}
	}
	return b.String()
}

// placeholderAt reports whether s starts with {name} for a name of vals.
func placeholderAt(s string, vals map[string]string) (string, string, bool) {
	end := strings.IndexByte(s, '}')
	if end < 2 {
		return "", "", false
	}
	name := s[1:end]
	v, ok := vals[name]
	return name, v, ok
}

// quoteSingle makes s one single-quoted shell word.
func quoteSingle(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// escapeDouble escapes the characters sh interprets inside double quotes.
func escapeDouble(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '$', '`', '"', '\\':
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
