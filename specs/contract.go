package specs

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// ContractProblem is one problem found while compiling contracts. Field is ""
// when the problem concerns the whole contract. Code is one of
// CodeUnknownType, CodeContractCycle, CodeContractDepth, CodeContractSize and
// CodeInvalidSchema. Message reads on
// its own; Suggestion may be "".
type ContractProblem struct {
	Contract, Field, Code, Message, Suggestion string
}

// BuildContracts compiles every contract to JSON Schema (seed 000 §1.3, seed
// 001): it fills Field.Schema, Contract.Schema and Contract.Hash. names is the
// declaration order; it decides the order of problems and of `required`.
// Contracts present in the map but missing from names are handled after them,
// sorted by name.
//
// A field compiles as follows. Type is a primitive (string number integer
// boolean array object null) → {"type": T}; or another contract's name → that
// contract's schema, inlined (a deep copy); or "" → no type keyword. Values
// become "enum" (unless Keywords has one). Keywords are copied as written,
// except `items`, which is compiled like a field: {type: X, values: …, …}
// where X may be a contract name (a string `items: X` is short for
// {type: X}). Optional fields are left out of `required`; all other fields are
// required, in declaration order. The contract's schema is
// {"type":"object","properties":{…},"required":[…]}, and Hash is
// Hash12(CanonicalJSON(schema)).
//
// Every problem is returned: unknown type names (CodeUnknownType, with a
// did-you-mean suggestion), contracts that contain themselves directly or
// through others (CodeContractCycle, one problem per cycle), nesting past
// MaxContractDepth (CodeContractDepth) or schemas past MaxContractNodes
// (CodeContractSize), and keywords that do not form a valid JSON Schema
// (CodeInvalidSchema). A contract with a
// problem, or one that contains such a contract, keeps a nil Schema and an
// empty Hash.
func BuildContracts(contracts map[string]*Contract, names []string) []ContractProblem {
	b := &contractBuilder{contracts: contracts, state: map[string]int{}, bad: map[string]bool{}}
	b.order = orderedNames(contracts, names)

	// 1. Unknown type names.
	for _, name := range b.order {
		c := contracts[name]
		for _, f := range c.Fields {
			if f == nil {
				continue
			}
			for _, ref := range fieldTypeRefs(f.Type, f.Keywords, "") {
				if isPrimitive(ref.typ) || contracts[ref.typ] != nil {
					continue
				}
				b.problem(name, f.Name, CodeUnknownType,
					fmt.Sprintf("unknown type '%s' for field '%s'%s of contract '%s'", ref.typ, f.Name, ref.where, name),
					b.typeSuggestion(ref.typ))
			}
		}
	}

	// 2. Keywords that do not form a valid schema (contained contracts are
	// stood in for by {"type":"object"}, so every field is judged on its own).
	for _, name := range b.order {
		b.checkKeywords(name)
	}

	// 3. Cycles, then the bounds of nesting (contract_bounds.go).
	b.findCycles()
	b.checkBounds()

	// 4. Schemas, dependencies first.
	for _, name := range b.order {
		b.build(name)
	}
	pos := make(map[string]int, len(b.order))
	for i, n := range b.order {
		pos[n] = i
	}
	sort.SliceStable(b.problems, func(i, j int) bool { return pos[b.problems[i].Contract] < pos[b.problems[j].Contract] })
	return b.problems
}

// Build states of a contract.
const (
	stateNew = iota
	stateBuilding
	stateDone
)

type contractBuilder struct {
	contracts map[string]*Contract
	order     []string
	state     map[string]int
	bad       map[string]bool // has its own problem
	probing   bool            // typed: contract names stand for {"type":"object"}
	problems  []ContractProblem
}

func (b *contractBuilder) problem(contract, field, code, msg, sugg string) {
	b.bad[contract] = true
	b.problems = append(b.problems, ContractProblem{Contract: contract, Field: field, Code: code, Message: msg, Suggestion: sugg})
}

func orderedNames(contracts map[string]*Contract, names []string) []string {
	seen := make(map[string]bool, len(contracts))
	var out []string
	for _, n := range names {
		if contracts[n] != nil && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	var rest []string
	for n, c := range contracts {
		if c != nil && !seen[n] {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}

// isPrimitive reports whether t is a JSON-Schema primitive type name.
func isPrimitive(t string) bool {
	switch t {
	case "string", "number", "integer", "boolean", "array", "object", "null":
		return true
	}
	return false
}

var primitiveTypeNames = []string{"string", "number", "integer", "boolean", "array", "object", "null"}

// typeAliases are spellings from other languages and their JSON-Schema names.
var typeAliases = map[string]string{
	"str": "string", "text": "string", "int": "integer", "long": "integer",
	"float": "number", "double": "number", "decimal": "number",
	"bool": "boolean", "list": "array", "dict": "object", "map": "object",
	"none": "null", "nil": "null",
}

func (b *contractBuilder) typeSuggestion(t string) string {
	elem := ""
	switch {
	case strings.HasSuffix(t, "[]"):
		elem = strings.TrimSuffix(t, "[]")
	case listTypeRe.MatchString(t):
		elem = listTypeRe.FindStringSubmatch(t)[1]
	case strings.HasSuffix(t, "?") && len(t) > 1:
		return fmt.Sprintf("use {type: %s, optional: true}", b.typeName(strings.TrimSuffix(t, "?")))
	}
	if elem != "" {
		return fmt.Sprintf("use {type: array, items: {type: %s}}", b.typeName(elem))
	}
	if a, ok := typeAliases[strings.ToLower(t)]; ok {
		return fmt.Sprintf("did you mean %q?", a)
	}
	cands := append(append([]string(nil), primitiveTypeNames...), b.order...)
	if s := didYouMean(t, cands); s != "" {
		return s
	}
	return "use one of " + strings.Join(primitiveTypeNames, ", ") + ", or a contract name"
}

// listTypeRe matches list[T] / List[T] / array[T] spellings.
var listTypeRe = regexp.MustCompile(`^(?i:list|array)\[\s*([A-Za-z_][A-Za-z0-9_]*)\s*\]$`)

// typeName maps a type spelling to a known name when there is an obvious one
// (str → string), for suggestions.
func (b *contractBuilder) typeName(t string) string {
	if isPrimitive(t) || b.contracts[t] != nil {
		return t
	}
	if a, ok := typeAliases[strings.ToLower(t)]; ok {
		return a
	}
	return t
}

// typeRef is a type name used by a field, and where ("" or " items",
// " items.items", …).
type typeRef struct {
	typ, where string
}

// fieldTypeRefs lists the type names a field uses: its own type and those of
// its (nested) `items`.
func fieldTypeRefs(typ string, kw map[string]any, where string) []typeRef {
	var out []typeRef
	if typ != "" {
		out = append(out, typeRef{typ, where})
	}
	if kw == nil {
		return out
	}
	sub := where + " items"
	switch it := kw["items"].(type) {
	case string:
		out = append(out, typeRef{it, sub})
	case map[string]any:
		t, _ := it["type"].(string)
		out = append(out, fieldTypeRefs(t, it, sub)...)
	}
	return out
}

// findCycles reports each cycle of contract containment once (on its first
// contract in declaration order) and marks every contract in it bad.
func (b *contractBuilder) findCycles() {
	// Edges in declaration order: contract → (field, contract).
	type edge struct{ field, to string }
	edges := map[string][]edge{}
	for _, name := range b.order {
		for _, f := range b.contracts[name].Fields {
			if f == nil {
				continue
			}
			for _, ref := range fieldTypeRefs(f.Type, f.Keywords, "") {
				if !isPrimitive(ref.typ) && b.contracts[ref.typ] != nil {
					edges[name] = append(edges[name], edge{f.Name, ref.typ})
				}
			}
		}
	}
	sccs := stronglyConnected(b.order, func(v string) []string {
		out := make([]string, len(edges[v]))
		for i, e := range edges[v] {
			out[i] = e.to
		}
		return out
	})
	pos := map[string]int{}
	for i, n := range b.order {
		pos[n] = i
	}
	var reports []struct {
		first string
		field string
		path  []string
	}
	for _, comp := range sccs {
		in := map[string]bool{}
		for _, n := range comp {
			in[n] = true
		}
		selfLoop := false
		for _, e := range edges[comp[0]] {
			if e.to == comp[0] {
				selfLoop = true
			}
		}
		if len(comp) == 1 && !selfLoop {
			continue
		}
		sort.Slice(comp, func(i, j int) bool { return pos[comp[i]] < pos[comp[j]] })
		first := comp[0]
		// Shortest cycle from first back to first, inside the component,
		// following edges in declaration order (BFS).
		type hop struct {
			node, field string
			prev        int
		}
		hops := []hop{{node: first, prev: -1}}
		visited := map[string]bool{}
		end := -1
		for i := 0; i < len(hops) && end < 0; i++ {
			for _, e := range edges[hops[i].node] {
				if !in[e.to] {
					continue
				}
				if e.to == first {
					hops = append(hops, hop{e.to, e.field, i})
					end = len(hops) - 1
					break
				}
				if !visited[e.to] {
					visited[e.to] = true
					hops = append(hops, hop{e.to, e.field, i})
				}
			}
		}
		var path []string
		for i := end; i > 0; i = hops[i].prev {
			path = append([]string{hops[hops[i].prev].node + "." + hops[i].field}, path...)
		}
		field := ""
		if len(path) > 0 {
			field = strings.TrimPrefix(path[0], first+".")
		}
		reports = append(reports, struct {
			first string
			field string
			path  []string
		}{first, field, path})
		for _, n := range comp {
			b.bad[n] = true
		}
	}
	sort.Slice(reports, func(i, j int) bool { return pos[reports[i].first] < pos[reports[j].first] })
	for _, r := range reports {
		b.problem(r.first, r.field, CodeContractCycle,
			fmt.Sprintf("contract '%s' contains itself: %s → %s", r.first, strings.Join(r.path, " → "), r.first),
			"a contract cannot contain itself, directly or through other contracts; use type: object for the recursive field")
	}
}

// build compiles one contract (and, first, the contracts it contains) and
// returns its schema, or nil when it or a contract it contains has a problem.
func (b *contractBuilder) build(name string) map[string]any {
	c := b.contracts[name]
	if c == nil {
		return nil // unknown names are reported in step 1
	}
	switch b.state[name] {
	case stateDone:
		return c.Schema
	case stateBuilding:
		return nil // a cycle; already reported
	}
	b.state[name] = stateBuilding
	defer func() { b.state[name] = stateDone }()
	c.Schema, c.Hash = nil, ""
	for _, f := range c.Fields {
		if f != nil {
			f.Schema = nil
		}
	}
	if b.bad[name] {
		return nil
	}
	props := make(map[string]any, len(c.Fields))
	required := make([]any, 0, len(c.Fields))
	schemas := make([]map[string]any, len(c.Fields))
	blocked := false
	for i, f := range c.Fields {
		if f == nil {
			continue
		}
		fs := b.typed(f.Type, f.Values, f.Keywords)
		if fs == nil {
			blocked = true
			continue
		}
		schemas[i] = fs
		props[f.Name] = fs
		if !f.Optional {
			required = append(required, f.Name)
		}
	}
	if blocked {
		return nil
	}
	// No compile of the whole schema here: checkKeywords judged every field
	// of every contract, a contained contract standing for an object, so
	// the schema is valid by construction. Compiling it again would judge
	// each contained contract once per level that contains it.
	schema := map[string]any{"type": "object", "properties": props, "required": required}
	canon, err := CanonicalJSON(schema)
	if err != nil {
		b.problem(name, "", CodeInvalidSchema, fmt.Sprintf("contract '%s': %v", name, err), "")
		return nil
	}
	for i, f := range c.Fields {
		if f != nil {
			f.Schema = schemas[i]
		}
	}
	c.Schema = schema
	c.Hash = Hash12(canon)
	return schema
}

// checkKeywords compiles a stand-in schema of the contract, in which
// contained contracts and unknown types are {"type":"object"}, and reports
// every field whose keywords do not form a valid JSON Schema. One compile per
// contract when all is well.
func (b *contractBuilder) checkKeywords(name string) {
	c := b.contracts[name]
	b.probing = true
	defer func() { b.probing = false }()
	props := map[string]any{}
	fields := make([]map[string]any, len(c.Fields))
	for i, f := range c.Fields {
		if f == nil {
			continue
		}
		fields[i] = b.typed(f.Type, f.Values, f.Keywords)
		props[fmt.Sprint(i)] = fields[i]
	}
	if _, err := NewSchema(map[string]any{"type": "object", "properties": props}); err == nil {
		return
	}
	for i, f := range c.Fields {
		if fields[i] == nil {
			continue
		}
		if _, err := NewSchema(fields[i]); err != nil {
			b.problem(name, f.Name, CodeInvalidSchema,
				fmt.Sprintf("field '%s' of contract '%s' is not a valid JSON Schema: %s", f.Name, name,
					strings.TrimPrefix(err.Error(), "invalid JSON Schema: ")),
				"check the JSON-Schema keywords of the field")
		}
	}
}

// typed compiles a type name, enum values and keywords into a schema. It
// returns nil when a contained contract could not be built.
func (b *contractBuilder) typed(typ string, values []any, kw map[string]any) map[string]any {
	out := map[string]any{}
	switch {
	case typ == "":
	case isPrimitive(typ):
		out["type"] = typ
	case b.probing:
		out["type"] = "object"
	default:
		sub := b.build(typ)
		if sub == nil {
			return nil
		}
		out = deepCopyMap(sub)
	}
	if values != nil {
		if _, has := kw["enum"]; !has {
			out["enum"] = deepCopy(values)
		}
	}
	for k, v := range kw {
		switch k {
		case "values", "optional", "opaque":
			continue
		case "required":
			if _, isBool := v.(bool); isBool {
				continue
			}
		case "items":
			is := b.items(v)
			if is == nil {
				return nil
			}
			out["items"] = is
			continue
		}
		out[k] = deepCopy(v)
	}
	return out
}

// items compiles an `items` keyword value. Values that are neither a type
// name nor a mapping are kept as written (the schema check then judges them).
func (b *contractBuilder) items(v any) any {
	switch it := v.(type) {
	case string:
		if s := b.typed(it, nil, nil); s != nil {
			return s
		}
		return nil
	case map[string]any:
		rest := make(map[string]any, len(it))
		typ := ""
		var values []any
		for k, e := range it {
			switch k {
			case "type":
				if s, ok := e.(string); ok {
					typ = s
					continue
				}
			case "values":
				if vs, ok := e.([]any); ok {
					values = vs
					continue
				}
			}
			rest[k] = e
		}
		if s := b.typed(typ, values, rest); s != nil {
			return s
		}
		return nil
	default:
		return deepCopy(v)
	}
}

// deepCopy copies maps and slices so that schemas never share structure with
// the spec's keywords or with each other.
func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return deepCopyMap(x)
	case map[any]any:
		out := make(map[any]any, len(x))
		for k, e := range x {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopy(e)
		}
		return out
	default:
		return v
	}
}

func deepCopyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, e := range m {
		out[k] = deepCopy(e)
	}
	return out
}
