package specs

import (
	"fmt"
	"sort"
	"strings"
)

// Severity says whether a diagnostic makes a spec invalid.
type Severity string

const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// ErrorType is the original server's class of a spec error; MCP clients match on it.
type ErrorType string

const (
	// ParseError: the text is not YAML (or not acceptable YAML: bad UTF-8, too large, …).
	ParseError ErrorType = "ir_parse_error"
	// ValidationError: the document does not match the IR schema of its version.
	ValidationError ErrorType = "ir_validation_error"
	// SemanticError: schema-valid, but references, routing or expressions are wrong.
	SemanticError ErrorType = "ir_semantic_error"
)

// Diagnostic is one problem found in a spec.
//
// Line and Column are 1-based; 0 means the position is unknown (for example an
// empty file). Path is the original's dotted path ("flows.main.steps.0.policy",
// "root" for the document itself). Code is stable across releases and is what
// tests and tools should match on; the codes are listed in codes.go.
type Diagnostic struct {
	File       string    `json:"file,omitempty"`
	Line       int       `json:"line"`
	Column     int       `json:"column"`
	Severity   Severity  `json:"severity"`
	Code       string    `json:"code"`
	ErrorType  ErrorType `json:"error_type"`
	Path       string    `json:"path"`
	Message    string    `json:"message"`
	Suggestion string    `json:"suggestion,omitempty"`
}

// String renders the diagnostic the way `stratum validate` prints it:
// "file:line:col: severity code: message (suggestion)", with control
// characters escaped.
func (d Diagnostic) String() string {
	var b strings.Builder
	file := d.File
	if file == "" {
		file = "<input>"
	}
	fmt.Fprintf(&b, "%s:%d:%d: %s %s: %s", EscapeControl(file), d.Line, d.Column, d.Severity, d.Code, EscapeControl(d.Message))
	if d.Suggestion != "" {
		fmt.Fprintf(&b, " (%s)", EscapeControl(d.Suggestion))
	}
	return b.String()
}

// controlRune returns the first control character of s: C0
// (U+0000–U+001F), DEL, C1 (U+0080–U+009F), a bidirectional formatting
// character (isBidi) or a line or paragraph separator (U+2028, U+2029).
func controlRune(s string) (rune, bool) {
	for _, r := range s {
		if isControl(r) || isBidi(r) {
			return r, true
		}
	}
	return 0, false
}

func isControl(r rune) bool { return r < 0x20 || (r >= 0x7f && r <= 0x9f) }

// isBidi reports the characters that reorder or break what a terminal shows
// without being C0 or C1 controls: the bidirectional marks, embeddings,
// overrides and isolates (U+061C, U+200E, U+200F, U+202A–U+202E,
// U+2066–U+2069: "abc\u202Egnp.exe" shows as "abcexe.png") and the line and
// paragraph separators U+2028, U+2029.
func isBidi(r rune) bool {
	switch {
	case r == 0x061c, r == 0x200e, r == 0x200f, r == 0x2028, r == 0x2029:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// EscapeControl writes every control character of s (C0, DEL, C1) as \xNN
// and every bidirectional formatting character or line/paragraph separator
// (isBidi) as \uNNNN, so that text taken from a spec, an agent or a provider
// cannot drive or reorder the terminal it is printed on. It is the one rule
// for untrusted text on a terminal: the runner's console, the CLI's
// human-readable output and the TUI (plain and full-screen) pass ids,
// outputs, violations and rationales through it before printing.
func EscapeControl(s string) string {
	if _, ok := controlRune(s); !ok {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case isControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case isBidi(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// EscapeControlLines is EscapeControl applied to each line of s, keeping
// the line breaks: a multi-line message stays multi-line, and nothing else
// of it can drive the terminal.
func EscapeControlLines(s string) string {
	if !strings.Contains(s, "\n") {
		return EscapeControl(s)
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = EscapeControl(l)
	}
	return strings.Join(lines, "\n")
}

// Diagnostics is every problem found in one spec. A non-empty Diagnostics with
// at least one error-severity entry is an error value.
type Diagnostics []Diagnostic

// Error joins the diagnostics, one per line.
func (ds Diagnostics) Error() string {
	lines := make([]string, len(ds))
	for i, d := range ds {
		lines[i] = d.String()
	}
	return strings.Join(lines, "\n")
}

// HasErrors reports whether any diagnostic has error severity.
func (ds Diagnostics) HasErrors() bool {
	for _, d := range ds {
		if d.Severity == SeverityError {
			return true
		}
	}
	return false
}

// Errors returns only the error-severity diagnostics.
func (ds Diagnostics) Errors() Diagnostics {
	var out Diagnostics
	for _, d := range ds {
		if d.Severity == SeverityError {
			out = append(out, d)
		}
	}
	return out
}

// Warnings returns only the warning-severity diagnostics.
func (ds Diagnostics) Warnings() Diagnostics {
	var out Diagnostics
	for _, d := range ds {
		if d.Severity == SeverityWarning {
			out = append(out, d)
		}
	}
	return out
}

// Sort orders diagnostics by file, line, column, then code and message, so
// output is deterministic.
func (ds Diagnostics) Sort() {
	sort.SliceStable(ds, func(i, j int) bool {
		a, b := ds[i], ds[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Column != b.Column {
			return a.Column < b.Column
		}
		if a.Code != b.Code {
			return a.Code < b.Code
		}
		return a.Message < b.Message
	})
}
