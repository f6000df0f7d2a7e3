package specs_test

import (
	"github.com/stratum-go/stratum/specs"
	"github.com/stratum-go/stratum/specs/exprlang"
)

// The tests of package specs parse with the real expression compiler.
func init() { specs.SetTestCompile(exprlang.Compile) }
