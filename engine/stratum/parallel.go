package stratum

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Branch is one concurrent computation of All, Any, AtLeast, Settle or
// Race. It must honour ctx: a cancelled branch should return promptly.
type Branch[T any] func(context.Context) (T, error)

// Result is a branch's outcome in Settle.
type Result[T any] struct {
	Value T
	Err   error
}

// outcome is a finished branch.
type outcome[T any] struct {
	i   int
	v   T
	err error
}

// launch runs every branch in its own goroutine on a child of ctx and
// returns the outcomes as they finish, the cancel function and a wait that
// returns once every goroutine has ended. A panicking branch fails with an
// error saying so.
func launch[T any](ctx context.Context, branches []Branch[T]) (<-chan outcome[T], context.CancelFunc, func()) {
	ctx, cancel := context.WithCancel(ctx)
	ch := make(chan outcome[T], len(branches))
	var wg sync.WaitGroup
	for i, b := range branches {
		wg.Go(func() {
			o := outcome[T]{i: i}
			defer func() {
				if r := recover(); r != nil {
					o.err = fmt.Errorf("%w: branch panicked: %v", ErrStratum, r)
				}
				ch <- o
			}()
			if b == nil {
				o.err = fmt.Errorf("%w: nil branch", ErrStratum)
				return
			}
			o.v, o.err = b(ctx)
		})
	}
	return ch, cancel, wg.Wait
}

// All runs the branches concurrently and returns their values in input
// order. The first error cancels the others; All waits for them
// and returns that error as a *BranchError naming the branch.
func All[T any](ctx context.Context, branches ...Branch[T]) ([]T, error) {
	ch, cancel, wait := launch(ctx, branches)
	defer cancel()
	out := make([]T, len(branches))
	var first error
	for range branches {
		o := <-ch
		if o.err != nil && first == nil {
			first = &BranchError{Index: o.i, Err: o.err}
			cancel()
		}
		out[o.i] = o.v
	}
	wait()
	if first != nil {
		return nil, first
	}
	return out, nil
}

// Any returns the first branch to succeed, cancels the others and waits
// for them. When every branch fails it returns their errors joined
// (each a *BranchError).
func Any[T any](ctx context.Context, branches ...Branch[T]) (T, error) {
	vs, err := firstN(ctx, 1, branches)
	if err != nil {
		var zero T
		return zero, err
	}
	return vs[0], nil
}

// AtLeast returns the first n successes in the order they finished,
// cancels the others and waits for them. When n can no longer be reached
// it cancels the rest and returns the failures joined.
func AtLeast[T any](ctx context.Context, n int, branches ...Branch[T]) ([]T, error) {
	if n > len(branches) {
		return nil, fmt.Errorf("%w: AtLeast(%d) of %d branches", ErrStratum, n, len(branches))
	}
	if n <= 0 {
		return []T{}, nil
	}
	return firstN(ctx, n, branches)
}

func firstN[T any](ctx context.Context, n int, branches []Branch[T]) ([]T, error) {
	if len(branches) == 0 {
		return nil, fmt.Errorf("%w: no branches", ErrStratum)
	}
	ch, cancel, wait := launch(ctx, branches)
	defer cancel()
	var got []T
	var errs []error
	for range branches {
		o := <-ch
		if o.err != nil {
			errs = append(errs, &BranchError{Index: o.i, Err: o.err})
		} else if len(got) < n {
			got = append(got, o.v)
		}
		if len(got) == n || len(branches)-len(errs) < n {
			break
		}
	}
	cancel()
	wait()
	if len(got) < n {
		return nil, errors.Join(errs...)
	}
	return got, nil
}

// Settle runs every branch to its end and returns each outcome in input
// order (no branch is required to succeed); nothing is cancelled.
func Settle[T any](ctx context.Context, branches ...Branch[T]) []Result[T] {
	ch, cancel, wait := launch(ctx, branches)
	defer cancel()
	out := make([]Result[T], len(branches))
	for range branches {
		o := <-ch
		out[o.i] = Result[T]{Value: o.v, Err: o.err}
	}
	wait()
	return out
}

// Race returns the first branch to succeed, cancels the losers and waits
// for them to return before it does. When every branch fails it
// returns the last error (as a *BranchError).
func Race[T any](ctx context.Context, branches ...Branch[T]) (T, error) {
	vs, err := firstN(ctx, 1, branches)
	if err != nil {
		var zero T
		var last error = err
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			if es := j.Unwrap(); len(es) > 0 {
				last = es[len(es)-1]
			}
		}
		return zero, last
	}
	return vs[0], nil
}

// AllValid is All followed by validate over the values: when every branch
// succeeded and validate rejects the values, the error is
// ErrParallelValidation.
func AllValid[T any](ctx context.Context, validate func([]T) bool, branches ...Branch[T]) ([]T, error) {
	vs, err := All(ctx, branches...)
	if err != nil {
		return nil, err
	}
	if validate != nil && !validate(vs) {
		return vs, ErrParallelValidation
	}
	return vs, nil
}
