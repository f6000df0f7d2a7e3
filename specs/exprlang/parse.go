package exprlang

import "github.com/stratum-go/stratum/specs"

// ParseSpec is specs.Parse with Compile: the spec parser the stratum
// command gives the engine (engine.Service.ParseSpec) and the store
// (store.Options.ParseSpec). A Go program gives them none, so it links
// neither the spec parser nor this package.
func ParseSpec(file string, src []byte) (*specs.Spec, specs.Diagnostics) {
	return specs.Parse(file, src, Compile)
}
