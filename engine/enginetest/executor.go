package enginetest

import (
	"context"

	"github.com/stratum-go/stratum/engine"
)

// ExecutorFunc adapts a function to engine.Executor: a test's executor.
type ExecutorFunc func(ctx context.Context, req engine.StepRequest) (engine.StepOutcome, error)

var _ engine.Executor = ExecutorFunc(nil)

// Execute calls f.
func (f ExecutorFunc) Execute(ctx context.Context, req engine.StepRequest) (engine.StepOutcome, error) {
	return f(ctx, req)
}
