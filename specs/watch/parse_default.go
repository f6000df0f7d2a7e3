package watch

import (
	"github.com/stratum-go/stratum/specs"
	"github.com/stratum-go/stratum/specs/exprlang"
)

// defaultParse is the parser used when Options.Parse is nil.
func defaultParse(path string) (*specs.Spec, specs.Diagnostics) {
	return specs.ParseFile(path, exprlang.Compile)
}
