package specs

import "regexp"

// compileGuardrail compiles a guardrail pattern the way the original does:
// case-insensitive and multiline.
func compileGuardrail(p string) (*regexp.Regexp, error) {
	return regexp.Compile("(?im)" + p)
}
