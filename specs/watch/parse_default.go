package watch

import (
	"fmt"

	"github.com/stratum-go/stratum/specs"
)

// defaultParse is the parser used when Options.Parse is nil.
func defaultParse(path string) (*specs.Spec, specs.Diagnostics) {
	return nil, specs.Diagnostics{{
		File:      path,
		Severity:  specs.SeverityError,
		Code:      "internal_error",
		ErrorType: specs.ParseError,
		Path:      "root",
		Message:   fmt.Sprintf("no spec parser configured for %s", path),
	}}
}
