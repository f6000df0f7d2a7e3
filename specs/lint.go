package specs

import (
	"fmt"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// Warning codes: constructs that validate and run but rarely mean what their
// author meant. A warning never makes a spec invalid; `stratum validate
// --strict` counts it as an error.
const (
	// CodeRoutingTargetRuns: a step that is only the on_fail target of
	// another step also runs on the success path, because the flow reaches
	// it in dependency order (as the original server does).
	CodeRoutingTargetRuns = "routing-target-runs"
	// CodeUncheckedKeyword: a contract field carries a JSON-Schema keyword
	// that is never checked (it applies to another type, or it is an
	// annotation such as format).
	CodeUncheckedKeyword = "unchecked-keyword"
	// CodeIsolationBranch: a fan-out step with isolation: branch, which the
	// original accepts but whose tasks stratum does not run (stratum run
	// and stratum_parallel_start refuse it before anything runs; an agent
	// running the tasks itself over MCP may honour it).
	CodeIsolationBranch = "isolation-branch"
)

// lint adds the warnings of a spec that has no error: the checks that need
// the whole, valid spec.
func (c *checker) lint(b *build) {
	if c.diags.HasErrors() {
		return
	}
	for _, name := range b.spec.FlowNames {
		if fs := b.flows[name]; fs != nil {
			c.lintRoutingTargets(fs)
			c.lintIsolationBranch(fs)
		}
	}
	for _, name := range b.spec.ContractNames {
		if cs := b.contracts[name]; cs != nil {
			c.lintContract(cs)
		}
	}
}

// successPath returns the indexes (into f.Steps) of the steps the flow runs
// when every step succeeds and every gate is approved: the execution order,
// following next and on_approve jumps, ending at a gate whose on_approve is
// null, at the end, or when a jump comes back to a step already on the path.
func successPath(f *Flow) map[int]bool {
	pos := make(map[string]int, len(f.Order)) // step id → position in Order
	for p, idx := range f.Order {
		pos[f.Steps[idx].ID] = p
	}
	on := map[int]bool{}
	for p := 0; p < len(f.Order) && !on[f.Order[p]]; {
		idx := f.Order[p]
		on[idx] = true
		s := f.Steps[idx]
		jump := s.Next
		if s.IsGate() {
			if s.OnApprove == "" {
				break
			}
			jump = s.OnApprove
		}
		if jump == "" {
			p++
			continue
		}
		np, ok := pos[jump]
		if !ok {
			break
		}
		p = np
	}
	return on
}

// lintRoutingTargets warns about a step that some other step routes to on
// failure (on_fail), that no step routes to on success (next, on_approve),
// and that the success path runs all the same, unguarded by skip_if: the
// author almost always meant it to run only when routed to.
func (c *checker) lintRoutingTargets(fs *flowSrc) {
	f := fs.f
	if len(f.Order) != len(f.Steps) {
		return
	}
	routedFrom := map[string][]string{} // target id → "the on_fail target of 'x'", …
	onSuccess := map[string]bool{}      // targets some step routes to on success
	for _, s := range f.Steps {
		if s.OnFail != "" {
			routedFrom[s.OnFail] = append(routedFrom[s.OnFail], fmt.Sprintf("the on_fail target of '%s'", s.ID))
		}
		onSuccess[s.Next], onSuccess[s.OnApprove] = true, true
	}
	if len(routedFrom) == 0 {
		return
	}
	on := successPath(f)
	for i, ss := range fs.steps {
		s := ss.s
		why, routed := routedFrom[s.ID]
		if !routed || onSuccess[s.ID] || s.SkipIf != nil || !on[i] || ss.m == nil {
			continue
		}
		c.warn(CodeRoutingTargetRuns, ss.m.keyNode("id"), ss.spath(f.Name),
			fmt.Sprintf("step '%s' is %s, but it also runs when every step succeeds: the flow reaches it in dependency order",
				s.ID, strings.Join(why, " and ")),
			"Add a skip_if that is true on the success path, or end the success path before it (a gate's on_approve: ~, or next: past it).")
	}
}

// lintIsolationBranch warns about fan-out steps with isolation: branch:
// valid as in the original, but stratum does not run their tasks.
func (c *checker) lintIsolationBranch(fs *flowSrc) {
	for _, ss := range fs.steps {
		if s := ss.s; s.FansOut() && s.Isolation == "branch" && ss.m != nil {
			c.warn(CodeIsolationBranch, ss.m.valNode("isolation"), ss.spath(fs.f.Name)+".isolation",
				fmt.Sprintf("step '%s' has isolation: branch, which stratum does not run: `stratum run` and stratum_parallel_start refuse it before any task starts (concurrent tasks cannot share one checkout on different branches); an agent running the tasks itself over MCP sees it in the dispatch", s.ID),
				"Use isolation: worktree (a branch and a worktree per task, merged in task order) or isolation: none.")
		}
	}
}

// keywordTypes says which JSON types a type-specific keyword constrains; a
// keyword on a field of another type is never checked.
var keywordTypes = map[string][]string{
	"minLength": {"string"}, "maxLength": {"string"}, "pattern": {"string"},
	"minimum": {"number", "integer"}, "maximum": {"number", "integer"},
	"exclusiveMinimum": {"number", "integer"}, "exclusiveMaximum": {"number", "integer"},
	"multipleOf": {"number", "integer"},
	"items":      {"array"}, "minItems": {"array"}, "maxItems": {"array"}, "uniqueItems": {"array"},
	"properties": {"object"}, "required": {"object"}, "additionalProperties": {"object"},
	"minProperties": {"object"}, "maxProperties": {"object"},
}

var jsonTypes = map[string]bool{"string": true, "number": true, "integer": true, "boolean": true, "array": true, "object": true, "null": true}

// lintContract warns about keywords of a contract's fields that no
// validation ever checks.
func (c *checker) lintContract(cs *contractSrc) {
	con := cs.c
	for _, fd := range con.Fields {
		def := cs.defNode[fd.Name]
		keys := make([]string, 0, len(fd.Keywords))
		for k := range fd.Keywords {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		path := "contracts." + con.Name + "." + fd.Name
		for _, k := range keys {
			if k == "format" {
				c.warn(CodeUncheckedKeyword, keyIn(def, k), path+"."+k,
					fmt.Sprintf("'format' on field '%s' of contract '%s' is an annotation: no value is ever checked against it", fd.Name, con.Name),
					"Use pattern (a regular expression) to check the shape of the value.")
				continue
			}
			types, specific := keywordTypes[k]
			if !specific || !jsonTypes[fd.Type] || contains(types, fd.Type) {
				continue
			}
			c.warn(CodeUncheckedKeyword, keyIn(def, k), path+"."+k,
				fmt.Sprintf("'%s' on field '%s' of contract '%s' is never checked: it applies to %s values and the field is %s",
					k, fd.Name, con.Name, strings.Join(types, "/"), fd.Type),
				fmt.Sprintf("Remove '%s', or change the field's type.", k))
		}
	}
}

// keyIn returns the key node k of the mapping node m (or m itself).
func keyIn(m *yaml.Node, k string) *yaml.Node {
	m = resolve(m)
	if m == nil || m.Kind != yaml.MappingNode {
		return m
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == k {
			return m.Content[i]
		}
	}
	return m
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
