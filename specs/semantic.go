package specs

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// semantic runs the semantic checks (ir_semantic_error) and the
// normalisation that they need (Fn pointers, effective fields, order).
func (c *checker) semantic(b *build) {
	c.checkContracts(b)
	for _, name := range b.spec.FunctionNames {
		c.checkFunction(b, b.fns[name])
	}
	for _, name := range b.spec.FlowNames {
		c.checkFlow(b, b.flows[name])
	}
	c.checkRecursion(b)
	c.checkWorkflow(b)
}

func (c *checker) checkContracts(b *build) {
	if len(b.spec.ContractNames) == 0 {
		return
	}
	for _, p := range BuildContracts(b.spec.Contracts, b.spec.ContractNames) {
		code := p.Code
		if code == "" {
			code = CodeInvalidSchema
		}
		path := "contracts." + p.Contract
		pos := Pos{}
		if con := b.spec.Contracts[p.Contract]; con != nil {
			pos = con.Pos
			if p.Field != "" {
				path += "." + p.Field
				if f := con.Field(p.Field); f != nil {
					pos = f.Pos
				}
				if code == CodeUnknownType {
					cs := b.contracts[p.Contract]
					if tn := unknownTypeNode(b, cs.defNode[p.Field], 0); tn != nil {
						pos = posOf(tn)
					} else if tn := cs.typeNode[p.Field]; tn != nil {
						pos = posOf(tn)
					}
				}
			}
		}
		c.addAt(code, pos, path, p.Message, p.Suggestion)
	}
}

// contractNames returns the declared contract names (for suggestions).
func (b *build) contractNames() []string { return b.spec.ContractNames }

func (c *checker) undefinedContract(b *build, n *yaml.Node, path, msg, name string) {
	sugg := c.didYouMean(name, b.contractNames())
	if sugg == "" {
		if len(b.spec.ContractNames) == 0 {
			sugg = "Define it under contracts:"
		} else {
			sugg = "Defined contracts: " + shortList(b.spec.ContractNames, 10)
		}
	}
	c.add(CodeUndefinedContract, n, path, msg, sugg)
}

var placeholderRe = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)\}`)

func (c *checker) checkFunction(b *build, fs *fnSrc) {
	fn, m, path := fs.fn, fs.m, fs.pth
	if m.node == nil || m.node.Kind != yaml.MappingNode {
		return
	}
	switch fn.Mode {
	case ModeGate:
		for _, k := range []string{"ensure", "budget", "retries", "guardrails", "run"} {
			if m.has(k) {
				c.add(CodeGateFunctionField, m.keyNode(k), path+"."+k,
					fmt.Sprintf("Gate function '%s' must not have '%s'", fn.Name, k),
					"Remove it: gates are resolved by a reviewer, not validated or retried.")
			}
		}
		if fn.Cache {
			c.add(CodeCacheField, m.keyNode("cache"), path+".cache",
				fmt.Sprintf("Gate function '%s' must not have 'cache: true'", fn.Name), "Only compute functions may be cached.")
		}
		if fn.OnTimeout == "" {
			fn.OnTimeout = "kill"
		}
		if fn.Approver == "" {
			fn.Approver = "any"
		}
		c.humanTimeout(fn, m, path)
	case ModeInfer, ModeCompute:
		for _, k := range []string{"on_timeout", "approver"} {
			if m.has(k) {
				c.add(CodeGateFunctionField, m.keyNode(k), path+"."+k,
					fmt.Sprintf("Function '%s' has '%s' but is not a gate (mode: %s)", fn.Name, k, fn.Mode),
					"Remove it, or make the function mode: gate.")
			}
		}
		switch {
		case m.bad["output"]:
		case fn.Output == "":
			c.add(CodeUndefinedContract, m.keyNode("output"), path+".output",
				fmt.Sprintf("Function '%s' has no output contract", fn.Name),
				"Add output: <ContractName> (non-gate functions must name a contract).")
		case b.spec.Contracts[fn.Output] == nil:
			c.undefinedContract(b, m.valNode("output"), path+".output",
				fmt.Sprintf("Function '%s' output contract '%s' not defined", fn.Name, fn.Output), fn.Output)
		}
		if fn.Mode != ModeCompute && m.has("run") {
			c.add(CodeRunField, m.keyNode("run"), path+".run",
				fmt.Sprintf("Function '%s' has 'run' but is not a compute function", fn.Name),
				"Use mode: compute for functions that run a command.")
		}
		if fn.Mode != ModeCompute && fn.Cache {
			c.add(CodeCacheField, m.keyNode("cache"), path+".cache",
				fmt.Sprintf("Function '%s' has 'cache: true' but is not a compute function", fn.Name),
				"Only compute functions may be cached.")
		}
		if con := b.spec.Contracts[fn.Output]; con != nil {
			for _, e := range fn.Ensure {
				c.checkResultPaths(e, con, path+".ensure", "ensure")
			}
		}
	}
	// opaque inputs must not be interpolated into the intent.
	if fn.Intent != "" {
		opaque := map[string]bool{}
		for _, p := range fn.Input {
			if p.Opaque {
				opaque[p.Name] = true
			}
		}
		c.checkOpaqueInline(fn.Intent, opaque, m.valNode("intent"), path+".intent",
			fmt.Sprintf("function '%s'", fn.Name))
	}
}

func (c *checker) checkOpaqueInline(intent string, opaque map[string]bool, n *yaml.Node, path, owner string) {
	if len(opaque) == 0 {
		return
	}
	seen := map[string]bool{}
	for _, mm := range placeholderRe.FindAllStringSubmatch(intent, -1) {
		name := mm[1]
		if opaque[name] && !seen[name] {
			seen[name] = true
			c.add(CodeOpaqueInline, n, path,
				fmt.Sprintf("opaque input '%s' is interpolated into the intent of %s as {%s}", name, owner, name),
				"Opaque inputs are passed as a structured attachment; refer to them by name without {braces}.")
		}
	}
}

// checkResultPaths reports result.<f> reads where the contract has no field f.
func (c *checker) checkResultPaths(e *Expr, con *Contract, path, label string) {
	if e == nil || con == nil {
		return
	}
	seen := map[string]bool{}
	var names []string
	for _, f := range con.Fields {
		names = append(names, f.Name)
	}
	for _, p := range e.ResultPaths() {
		if len(p) == 0 || seen[p[0]] {
			continue
		}
		seen[p[0]] = true
		if con.Field(p[0]) != nil {
			continue
		}
		sugg := c.didYouMean(p[0], names)
		if sugg == "" {
			sugg = fmt.Sprintf("Contract '%s' has fields %s", con.Name, shortList(names, 10))
		}
		c.addAt(CodeUnknownResultField, e.Pos, path,
			fmt.Sprintf("%s '%s' reads result.%s, but contract '%s' has no field '%s'", label, e.Source, p[0], con.Name, p[0]),
			sugg)
	}
}

// ref is a parsed `$` reference.
type ref struct {
	input string // $.input.<input>
	step  string // $.steps.<step>.output…
}

// parseRef parses a `$` reference; ok=false with a reason for malformed ones.
func parseRef(s string) (ref, string, bool) {
	parts := strings.Split(s, ".")
	if parts[0] != "$" || len(parts) < 2 {
		return ref{}, "expected $.input.<name> or $.steps.<id>.output[.<field>]", false
	}
	switch parts[1] {
	case "input":
		if len(parts) < 3 || parts[2] == "" {
			return ref{}, "expected $.input.<name>", false
		}
		return ref{input: parts[2]}, "", true
	case "steps":
		if len(parts) < 3 || parts[2] == "" {
			return ref{}, "expected $.steps.<id>.output[.<field>]", false
		}
		if len(parts) < 4 || parts[3] != "output" {
			return ref{}, fmt.Sprintf("expected '$.steps.%s.output[.<field>]'", parts[2]), false
		}
		for _, p := range parts[4:] {
			if p == "" {
				return ref{}, "empty path segment", false
			}
		}
		return ref{step: parts[2]}, "", true
	}
	return ref{}, "expected $.input.<name> or $.steps.<id>.output[.<field>]", false
}

// flowCtx is what the step checks of one flow share.
type flowCtx struct {
	fls     *flowSrc
	ids     map[string]int // first index of each id
	idList  []string
	inputs  map[string]*Param
	inNames []string
	rank    map[int]int // position in Flow.Order
}

// checkRef checks one `$` reference found in a step; it returns the index of
// the referenced step (-1 if none).
func (c *checker) checkRef(fc *flowCtx, val string, n *yaml.Node, path, where string) int {
	r, why, ok := parseRef(val)
	if !ok {
		c.add(CodeBadRef, n, path, fmt.Sprintf("malformed reference '%s' in %s: %s", val, where, why),
			"Use $.input.<name> or $.steps.<id>.output[.<field>].")
		return -1
	}
	if r.input != "" {
		if fc.inputs[r.input] == nil {
			sugg := c.didYouMean(r.input, fc.inNames)
			if sugg == "" {
				sugg = fmt.Sprintf("Declare it under flows.%s.input", fc.fls.f.Name)
			}
			c.add(CodeUndefinedInput, n, path,
				fmt.Sprintf("'%s' in %s: flow '%s' declares no input '%s'", val, where, fc.fls.f.Name, r.input), sugg)
		}
		return -1
	}
	idx, ok := fc.ids[r.step]
	if !ok {
		c.undefinedStep(fc, n, path, fmt.Sprintf("'%s' in %s references undefined step '%s'", val, where, r.step), r.step)
		return -1
	}
	return idx
}

func (c *checker) undefinedStep(fc *flowCtx, n *yaml.Node, path, msg, id string) {
	sugg := c.didYouMean(id, fc.idList)
	if sugg == "" {
		sugg = "Steps of this flow: " + shortList(fc.idList, 10)
	}
	c.add(CodeUndefinedStep, n, path, msg, sugg)
}

func (c *checker) checkFlow(b *build, fls *flowSrc) {
	f, m := fls.f, fls.m
	if m.node == nil || m.node.Kind != yaml.MappingNode {
		return
	}
	if f.Output != "" && b.spec.Contracts[f.Output] == nil {
		c.undefinedContract(b, m.valNode("output"), fls.pth+".output",
			fmt.Sprintf("Flow '%s' output contract '%s' not defined", f.Name, f.Output), f.Output)
	}
	fc := &flowCtx{fls: fls, ids: map[string]int{}, inputs: map[string]*Param{}, rank: map[int]int{}}
	for _, p := range f.Input {
		fc.inputs[p.Name] = p
		fc.inNames = append(fc.inNames, p.Name)
	}
	for i, ss := range fls.steps {
		id := ss.s.ID
		if id == "" {
			continue
		}
		if first, dup := fc.ids[id]; dup {
			c.add(CodeDuplicateStepID, ss.m.valNode("id"), ss.spath(f.Name)+".id",
				fmt.Sprintf("Duplicate step id '%s' in flow '%s' (first used at line %d)", id, f.Name, fls.steps[first].m.valNode("id").Line),
				"Give every step of a flow a unique id.")
			continue
		}
		fc.ids[id] = i
		fc.idList = append(fc.idList, id)
	}
	// Edges: depends_on plus $.steps references in inputs (both checked here).
	deps := make([][]int, len(fls.steps))
	for i, ss := range fls.steps {
		s, sp := ss.s, ss.spath(f.Name)
		set := map[int]bool{}
		for j, d := range s.DependsOn {
			if idx, ok := fc.ids[d]; ok {
				set[idx] = true
			} else {
				c.undefinedStep(fc, ss.dependNode[j], sp+".depends_on",
					fmt.Sprintf("Step '%s' depends_on undefined step '%s'", s.ID, d), d)
			}
		}
		for j, in := range s.Inputs {
			if !strings.HasPrefix(in.Value, "$") {
				continue
			}
			if idx := c.checkRef(fc, in.Value, ss.inputNodes[j], sp+".inputs."+in.Name, "inputs."+in.Name); idx >= 0 {
				set[idx] = true
			}
		}
		for d := range set {
			deps[i] = append(deps[i], d)
		}
		sort.Ints(deps[i])
	}
	order, stuck := kahnOrder(deps)
	f.Order = order
	for r, idx := range order {
		fc.rank[idx] = r
	}
	for _, cyc := range findCycles(deps, stuck) {
		names := make([]string, 0, len(cyc)+1)
		for _, i := range cyc {
			names = append(names, fls.steps[i].s.ID)
		}
		names = append(names, names[0])
		first := fls.steps[cyc[0]]
		c.add(CodeDependencyCycle, first.m.valNode("id"), first.spath(f.Name)+".depends_on",
			fmt.Sprintf("Cycle detected in step dependencies of flow '%s': %s", f.Name, strings.Join(names, " → ")),
			"Break the cycle: a step cannot depend (via depends_on or $.steps inputs) on a step that depends on it.")
	}
	for _, ss := range fls.steps {
		if !ss.broken {
			c.checkStep(b, fc, ss)
		}
	}
}

// unknownTypeNode finds, inside a contract field definition (including
// nested items), the first `type` value that is neither a primitive nor a
// contract name.
func unknownTypeNode(b *build, def *yaml.Node, depth int) *yaml.Node {
	def = resolve(def)
	if def == nil || def.Kind != yaml.MappingNode || depth > MaxDepth {
		return nil
	}
	for i := 0; i+1 < len(def.Content); i += 2 {
		k, v := resolve(def.Content[i]), resolve(def.Content[i+1])
		switch {
		case k.Value == "type" && isStr(v):
			if !slices.Contains(primitiveTypes, v.Value) && b.spec.Contracts[v.Value] == nil {
				return v
			}
		case v.Kind == yaml.MappingNode:
			if n := unknownTypeNode(b, v, depth+1); n != nil {
				return n
			}
		}
	}
	return nil
}
