package stratum

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/stratum-go/stratum/engine/internal/infer"
	"github.com/stratum-go/stratum/specs"
)

// Probabilistic holds the samples of a Probable call: one in
// production, Options.SampleN in test mode.
type Probabilistic[T any] struct {
	samples []T
	agreeOn string // the JSON field compared ("" = the whole value)
	fn      string // the function sampled, for errors
}

// MostLikely returns the modal sample (the first one on a tie); the zero
// T when there are none.
func (p Probabilistic[T]) MostLikely() T {
	v, _ := p.modal()
	return v
}

// Samples returns the samples in the order they were drawn.
func (p Probabilistic[T]) Samples() []T { return append([]T(nil), p.samples...) }

// AssertStable returns the modal sample when the fraction of samples
// equal to it (on the Spec's AgreeOn field if it has one, else the whole
// value, compared as canonical JSON) is at least threshold, else a
// *StabilityError.
func (p Probabilistic[T]) AssertStable(threshold float64) (T, error) {
	v, agree := p.modal()
	if len(p.samples) == 0 || agree < threshold {
		e := &StabilityError{Function: p.fn, Agreement: agree, Threshold: threshold}
		for _, s := range p.samples {
			e.Samples = append(e.Samples, plainJSON(s))
		}
		var zero T
		return zero, e
	}
	return v, nil
}

// modal returns the most frequent sample and its share.
func (p Probabilistic[T]) modal() (T, float64) {
	var zero T
	if len(p.samples) == 0 {
		return zero, 0
	}
	keys := make([]string, len(p.samples))
	count := map[string]int{}
	for i, s := range p.samples {
		keys[i] = agreementKey(s, p.agreeOn)
		count[keys[i]]++
	}
	best := 0
	for i := range keys {
		if count[keys[i]] > count[keys[best]] {
			best = i
		}
	}
	return p.samples[best], float64(count[keys[best]]) / float64(len(p.samples))
}

// agreementKey is v's field (or v itself) as canonical JSON.
func agreementKey(v any, field string) string {
	x := plainJSON(v)
	if field != "" {
		if m, ok := x.(map[string]any); ok {
			x = m[field]
		}
	}
	b, err := specs.CanonicalJSON(x)
	if err != nil {
		b, _ = json.Marshal(x)
	}
	return string(b)
}

// Probable calls the function for a Probabilistic answer: one
// sample, or Options.SampleN samples in test mode, drawn one after the
// other (each a full call with its retries, charged to one envelope and
// one trace record).
func (f *Fn[In, Out]) Probable(ctx context.Context, in In) (Probabilistic[Out], error) {
	if f == nil {
		return Probabilistic[Out]{}, fmt.Errorf("%w: Probable on a nil *Fn (define it with NewInfer)", ErrStratum)
	}
	c, err := begin(ctx, f.name, f.spec.Budget)
	if err != nil {
		return Probabilistic[Out]{}, err
	}
	p, err := f.probable(ctx, c, in)
	if err != nil {
		c.finish(ctx, nil, err)
		return p, err
	}
	c.finish(ctx, p.samples, nil)
	return p, nil
}

func (f *Fn[In, Out]) probable(ctx context.Context, c *callState, in In) (Probabilistic[Out], error) {
	if err := c.unpriced(f.name, f.spec.Model); err != nil {
		return Probabilistic[Out]{}, err
	}
	binds, raw, err := f.bindings(in)
	if err != nil {
		return Probabilistic[Out]{}, err
	}
	c.rec.Inputs, c.rec.ContractHash = raw, f.hash
	var failed []string
	for _, g := range f.spec.Given {
		if !g.holds(in) {
			failed = append(failed, g.desc)
		}
	}
	if len(failed) > 0 {
		return Probabilistic[Out]{}, &PreconditionError{Function: f.name, Violations: failed}
	}
	n := 1
	if c.rt.opts.TestMode {
		n = c.rt.opts.SampleN
	}
	return f.sample(ctx, c, binds, n)
}

// sample draws n answers one after the other.
func (f *Fn[In, Out]) sample(ctx context.Context, c *callState, binds []infer.Binding, n int) (Probabilistic[Out], error) {
	p := Probabilistic[Out]{agreeOn: f.spec.AgreeOn, fn: f.name}
	for range n {
		var out Out
		var err error
		if f.spec.Quorum > 1 {
			out, err = f.quorum(ctx, c, binds)
		} else {
			out, err = f.refined(ctx, c, binds)
		}
		if err != nil {
			return p, err
		}
		p.samples = append(p.samples, out)
	}
	return p, nil
}
