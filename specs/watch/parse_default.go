package watch

import (
	"github.com/stratum-go/stratum/specs"
)

// defaultParse is the parser used when Options.Parse is nil.
//
// TODO(watch): specs.ParseFile is still behind the decodewip build tag; switch
// to it as soon as it builds by default.
func defaultParse(path string) (*specs.Spec, specs.Diagnostics) {
	return nil, specs.Diagnostics{watchDiag(path, CodeInternalError,
		"no spec parser is built in yet; set watch.Options.Parse")}
}
