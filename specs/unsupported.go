package specs

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// Constructs of the original's newer releases that this stratum does not
// implement. A spec that uses one is reported with CodeUnsupported and a
// message naming the construct as a version gap, instead of the generic
// unknown-field, step-mode or "function not allowed" diagnostics a typo
// would get: the spec is fine for a newer stratum-mcp, not for this one.
//
// Every construct of the original's stratum-mcp is implemented now; what is
// left is, from its TypeScript rewrite (ts/src/ir/schema.ts), specs with
// version: 1 (an integer), a different IR altogether. The tables stay for
// the next release's constructs.
type newerConstruct struct {
	what string // the construct, as named in the message
	hint string // the suggestion
}

const notSupported = "%s not supported by this version of stratum"

var (
	// newerStepFields are step keys of newer releases, by key.
	newerStepFields = map[string]newerConstruct{}
	// newerStepTypes are step types of newer releases.
	newerStepTypes = map[string]newerConstruct{}
	// newerBuiltins are expression builtins of newer releases.
	newerBuiltins = map[string]newerConstruct{}
	// newerVersion is the TypeScript rewrite's integer version.
	newerVersion = newerConstruct{what: "'version: 1' specs (the format of stratum's TypeScript rewrite) are",
		hint: fmt.Sprintf("This stratum reads the stratum-mcp IR: version \"%s\", \"%s\" or \"%s\".", Version01, Version02, Version03)}
)

// message is the diagnostic message of a newer construct.
func (n newerConstruct) message() string { return fmt.Sprintf(notSupported, n.what) }

// NewerBuiltin reports whether name is an expression builtin of the
// original's newer releases, with the message an ExprCompiler gives a call
// to it (in an *ExprError whose Newer is name; Parse adds the hint).
func NewerBuiltin(name string) (message string, ok bool) {
	n := newerBuiltins[name]
	if n.what == "" {
		return "", false
	}
	return n.message(), true
}

// unsupported reports a newer construct at node n.
func (c *checker) unsupported(n newerConstruct, at *yaml.Node, path string) {
	c.add(CodeUnsupported, at, path, n.message(), n.hint)
}
