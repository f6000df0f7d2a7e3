package stratum

import (
	"context"
	"errors"
	"testing"
)

// Every error type of the library matches ErrStratum.
func TestErrorsMatchErrStratum(t *testing.T) {
	for _, err := range []error{
		&CompileError{}, &PreconditionError{}, &PostconditionError{}, &ParseError{}, &BudgetError{},
		&ConvergenceError{}, &ConsensusError{}, &StabilityError{}, &ReviewTimeoutError{}, &ReviewRejectedError{},
		&ProviderError{}, ErrParallelValidation,
	} {
		if !errors.Is(err, ErrStratum) || err.Error() == "" {
			t.Errorf("%T does not match ErrStratum", err)
		}
	}
	vs, err := AllValid(context.Background(), func(vs []int) bool { return vs[0] < vs[1] },
		func(context.Context) (int, error) { return 2, nil }, func(context.Context) (int, error) { return 1, nil })
	if !errors.Is(err, ErrParallelValidation) || len(vs) != 2 {
		t.Fatal(vs, err)
	}
	if _, err := AllValid(context.Background(), func(vs []int) bool { return true },
		func(context.Context) (int, error) { return 1, nil }); err != nil {
		t.Fatal(err)
	}
}

// A configuration problem (no model) is a clear error matching ErrStratum,
// not a panic.
func TestNoModelIsAClearError(t *testing.T) {
	t.Setenv("STRATUM_HOME", t.TempDir())
	rt, err := New(Options{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	_, err = MustInfer("f", Spec[string, vote]{Intent: "x"}).Call(WithRuntime(context.Background(), rt), "y")
	if !errors.Is(err, ErrStratum) {
		t.Fatalf("err = %v", err)
	}
	t.Log(err)
}
