package stratum

import (
	"fmt"

	"github.com/stratum-go/stratum/engine/internal/infer"
)

// compileExamples renders Spec.Examples once, for every prompt: each
// input bound as a call's input is, each output checked against the
// contract (an example that breaks it would teach the model the wrong
// shape).
func (f *Fn[In, Out]) compileExamples() error {
	if f.spec.MaxTokens < 0 {
		return &CompileError{Function: f.name, Message: fmt.Sprintf("MaxTokens %d is negative", f.spec.MaxTokens)}
	}
	for i, ex := range f.spec.Examples {
		binds, _, err := f.bindings(ex.In)
		if err != nil {
			return &CompileError{Function: f.name, Message: fmt.Sprintf("example %d: %v", i+1, err)}
		}
		out := plainJSON(ex.Out)
		if vs := f.contract.Check(out); len(vs) > 0 {
			return &CompileError{Function: f.name, Message: fmt.Sprintf("example %d's output does not fit the output contract: %s", i+1, joinViolations(vs))}
		}
		f.examples = append(f.examples, infer.Example{Inputs: binds, Output: out})
	}
	return nil
}
