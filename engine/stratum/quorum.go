package stratum

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/stratum-go/stratum/engine/internal/infer"
)

// quorum runs Quorum infer loops concurrently on one envelope,
// each with its own retries; failed ones are dropped. Answers agree when
// their AgreeOn fields are equal as canonical JSON; the largest group
// (the earliest started on a tie) wins if it has Threshold answers: its
// answer with the highest confidence field if Out has one, else its
// first.
func (f *Fn[In, Out]) quorum(ctx context.Context, c *callState, binds []infer.Binding) (Out, error) {
	n := f.spec.Quorum
	outs := make([]Out, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { outs[i], errs[i] = f.refined(ctx, c, binds) })
	}
	wg.Wait()
	var ok []Out
	ce := &ConsensusError{Function: f.name, Threshold: f.spec.Threshold}
	for i := range n {
		if errs[i] != nil {
			ce.Errors = append(ce.Errors, errs[i])
			continue
		}
		ok = append(ok, outs[i])
		ce.Outputs = append(ce.Outputs, plainJSON(outs[i]))
	}
	if err := ctx.Err(); err != nil {
		var zero Out
		return zero, err
	}
	if len(ok) == 0 {
		var be *BudgetError
		if errors.As(ce.Errors[0], &be) {
			var zero Out
			return zero, be
		}
	}
	group := f.largestGroup(ok)
	ce.Agreeing = len(group)
	if len(group) < f.spec.Threshold {
		var zero Out
		return zero, ce
	}
	return f.winner(ok, group), nil
}

// largestGroup returns the indexes of the largest agreeing group.
func (f *Fn[In, Out]) largestGroup(outs []Out) []int {
	groups := map[string][]int{}
	var order []string
	for i, o := range outs {
		k := agreementKey(o, f.spec.AgreeOn)
		if _, seen := groups[k]; !seen {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	var best []int
	for _, k := range order {
		if len(groups[k]) > len(best) {
			best = groups[k]
		}
	}
	return best
}

// winner is the agreeing answer with the highest confidence, else the
// first.
func (f *Fn[In, Out]) winner(outs []Out, group []int) Out {
	best := group[0]
	if f.confField == "" {
		return outs[best]
	}
	conf := func(i int) float64 {
		m, _ := plainJSON(outs[i]).(map[string]any)
		n, _ := m[f.confField].(json.Number)
		x, _ := n.Float64()
		return x
	}
	for _, i := range group[1:] {
		if conf(i) > conf(best) {
			best = i
		}
	}
	return outs[best]
}
