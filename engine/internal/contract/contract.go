package contract

import (
	"github.com/stratum-go/stratum/specs"
)

// Checker checks answers against one output contract. A nil *Checker
// checks nothing (no contract). It is immutable and safe for concurrent
// use.
type Checker struct {
	name   string
	schema *specs.Schema
}

// New compiles the contract name's JSON Schema (nil: a nil Checker).
func New(name string, schema map[string]any) (*Checker, error) {
	if schema == nil {
		return nil, nil
	}
	s, err := specs.NewSchema(schema)
	if err != nil {
		return nil, err
	}
	return &Checker{name: name, schema: s}, nil
}

// Of is the checker of the contract sp names name (nil when there is no
// such contract, or name is ""). Validation compiled every contract of a
// valid spec, so a contract that does not compile here cannot occur; it
// checks nothing.
func Of(sp *specs.Spec, name string) *Checker {
	if sp == nil || name == "" {
		return nil
	}
	c := sp.Contracts[name]
	if c == nil {
		return nil
	}
	ch, err := New(c.Name, c.Schema)
	if err != nil {
		return nil
	}
	return ch
}

// Name is the contract's name.
func (c *Checker) Name() string {
	if c == nil {
		return ""
	}
	return c.name
}

// Check returns every violation of v, in specs.Schema.Validate's order,
// each as "output contract 'NAME' violation: MSG"; nil when v fits.
func (c *Checker) Check(v any) []string {
	if c == nil {
		return nil
	}
	vs := c.schema.Validate(v)
	for i, m := range vs {
		vs[i] = "output contract '" + c.name + "' violation: " + m
	}
	return vs
}
