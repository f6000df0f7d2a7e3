package specs

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

func fields(since string, names ...string) map[string]string {
	m := map[string]string{}
	for _, n := range names {
		m[n] = since
	}
	return m
}

func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

var (
	topFields = &fieldSet{
		what: "the spec",
		fields: merge(fields(Version01, "version", "contracts", "functions", "flows"),
			fields(Version02, "workflow")),
		required: map[string][]string{Version01: {"version"}},
	}
	functionFields = &fieldSet{
		what: "a function",
		fields: merge(
			fields(Version01, "mode", "intent", "input", "output", "ensure", "budget", "retries", "model"),
			fields(Version02, "timeout", "guardrails", "cache", "on_timeout", "approver", "run")),
		ext: map[string]bool{"on_timeout": true, "approver": true, "run": true},
		required: map[string][]string{
			Version01: {"mode", "intent", "input", "output"},
			Version02: {"mode"},
		},
	}
	flowFields = &fieldSet{
		what:   "a flow",
		fields: merge(fields(Version01, "input", "output", "budget", "steps"), fields(Version02, "max_rounds")),
		required: map[string][]string{
			Version01: {"input", "output", "steps"},
			Version02: {"input", "steps"},
		},
	}
	stepFields = &fieldSet{
		what: "a step",
		fields: merge(
			fields(Version01, "id", "function", "inputs", "depends_on", "output_schema"),
			fields(Version02, "intent", "flow", "agent", "on_approve", "on_revise", "on_kill",
				"on_fail", "next", "skip_if", "skip_reason", "policy", "policy_fallback",
				"ensure", "retries", "output_contract", "model", "budget", "guardrails",
				"max_iterations", "exit_criterion", "score_expr", "accumulate", "accumulate_key",
				"cache", "reasoning_template", "task_reasoning_template", "run", "judge"),
			fields(Version03, "type", "source", "max_concurrent", "isolation", "require", "merge",
				"intent_template", "task_timeout", "capture_diff", "defer_advance", "pre_merge_verify", "stages")),
		ext:   map[string]bool{"run": true},
		newer: newerStepFields,
		required: map[string][]string{
			Version01: {"id", "function", "inputs"},
			Version02: {"id"},
		},
	}
	budgetFields = &fieldSet{
		what: "a budget",
		fields: merge(fields(Version01, "ms", "usd"),
			fields(Version02, "max_agent_dispatches", "max_tokens", "tokens")),
		ext: map[string]bool{"tokens": true},
	}
	workflowFields = &fieldSet{
		what:     "the workflow",
		fields:   fields(Version02, "name", "description", "input"),
		required: map[string][]string{Version01: {"name", "description", "input"}},
	}
	workflowParamFields = &fieldSet{
		what:     "a workflow input",
		fields:   merge(fields(Version02, "type", "required", "default", "description", "opaque")),
		ext:      map[string]bool{"opaque": true},
		required: map[string][]string{Version01: {"type"}},
	}
	// Function and flow input params are JSON-Schema objects: open, except
	// that the stratum keys need 0.2.
	paramFields = &fieldSet{
		what:   "an input parameter",
		fields: merge(fields(Version01, "type", "default"), fields(Version02, "opaque", "required")),
		ext:    map[string]bool{"opaque": true, "required": true},
		open:   true,
	}
	paramFieldsJSONRequired = &fieldSet{
		what:   "an input parameter",
		fields: merge(fields(Version01, "type", "default", "required"), fields(Version02, "opaque")),
		ext:    map[string]bool{"opaque": true},
		open:   true,
	}
	// Contract fields: the original lets any extra key through, so unknown
	// keys are warnings here, not errors.
	contractFieldFields = &fieldSet{
		what:    "a contract field",
		lenient: true,
		fields: fields(Version01, "type", "values", "optional", "required", "opaque",
			"enum", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength",
			"maxLength", "pattern", "format", "items", "minItems", "maxItems", "description"),
	}
	runFields = &fieldSet{
		what:     "a run command",
		fields:   fields(Version02, "cmd", "dir", "env"),
		required: map[string][]string{Version01: {"cmd"}},
	}
)

// schemaKeywords are the JSON-Schema keywords kept in Field.Keywords.
var schemaKeywords = []string{"enum", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
	"minLength", "maxLength", "pattern", "format", "items", "minItems", "maxItems", "description"}

// primitiveTypes are the contract field types that are not contract names.
var primitiveTypes = []string{"string", "number", "integer", "boolean", "array", "object", "null"}

var workflowNameRe = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// Source-side bookkeeping kept next to the IR for the semantic checks.
type fnSrc struct {
	m   *mapping
	fn  *Function
	pth string // functions.<name>
	// ensure expression nodes, parallel to fn.Ensure
	guardNodes []*yaml.Node
}

type stepSrc struct {
	m     *mapping
	s     *Step
	idx   int
	ipath string // flows.<f>.steps.<index> (schema stage)
	// input value nodes, parallel to s.Inputs
	inputNodes []*yaml.Node
	dependNode []*yaml.Node
	guardNodes []*yaml.Node
	// stages are a pipeline step's stage mappings, parallel to s.Stages
	// (nil entries for stages that are not mappings).
	stages []*mapping
	broken bool // the step is not a mapping
	// unsupported: the step uses a construct of a newer release (judge),
	// reported as such; its kind is unknown.
	unsupported bool
}

// spath is the semantic path flows.<f>.steps.<id>.
func (ss *stepSrc) spath(flow string) string {
	id := ss.s.ID
	if id == "" {
		id = strconv.Itoa(ss.idx)
	}
	return "flows." + flow + ".steps." + id
}

type flowSrc struct {
	m     *mapping
	f     *Flow
	steps []*stepSrc
	pth   string
}

type contractSrc struct {
	c        *Contract
	typeNode map[string]*yaml.Node // field → its `type` value node
	defNode  map[string]*yaml.Node // field → its definition mapping
}

// build is the state of one Parse after the structural stage.
type build struct {
	spec      *Spec
	fns       map[string]*fnSrc
	flows     map[string]*flowSrc
	contracts map[string]*contractSrc
	wf        *mapping
	root      *mapping
}

// check runs the structural, semantic and normalisation stages.
func (c *checker) check(rootNode *yaml.Node, src []byte) *Spec {
	root := c.asMapping(rootNode, "root")
	b := &build{
		spec: &Spec{File: c.file, Source: src, Contracts: map[string]*Contract{},
			Functions: map[string]*Function{}, Flows: map[string]*Flow{}},
		fns: map[string]*fnSrc{}, flows: map[string]*flowSrc{}, contracts: map[string]*contractSrc{},
		root: root,
	}
	if !c.checkVersion(root) {
		return nil
	}
	b.spec.Version = c.version
	c.checkFields(root, topFields, "root")

	if cm, ok := c.object(root, "contracts", "root"); ok {
		c.buildContracts(b, cm)
	}
	if fm, ok := c.object(root, "functions", "root"); ok {
		for _, name := range fm.keys {
			c.buildFunction(b, fm, name)
		}
	}
	if flm, ok := c.object(root, "flows", "root"); ok {
		for _, name := range flm.keys {
			c.buildFlow(b, flm, name)
		}
	}
	if c.since(Version02) {
		if wm, ok := c.object(root, "workflow", "root"); ok {
			c.buildWorkflow(b, wm)
		}
	}
	c.runExprJobs()
	c.semantic(b)
	c.lint(b)
	return b.spec
}

var knownVersions = []string{Version01, Version02, Version03}

// checkVersion finds the version; false when nothing else can be checked.
func (c *checker) checkVersion(root *mapping) bool {
	e, ok := root.get("version")
	if !ok {
		c.add(CodeMissingVersion, root.node, "version", "'version' is a required property",
			fmt.Sprintf("Add version: \"%s\"", LatestVersion))
		return false
	}
	n := e.val
	v := n.Value
	if n.Kind != yaml.ScalarNode {
		v = reprNode(n)
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!int" && v == "1" {
		c.unsupported(newerVersion, n, "version")
		return false
	}
	known := false
	for _, k := range knownVersions {
		known = known || v == k
	}
	if !known || n.Kind != yaml.ScalarNode {
		shown := v
		if isNull(n) {
			shown = "None"
		}
		c.add(CodeUnknownVersion, n, "version", fmt.Sprintf("Unknown IR version: '%s'", shown),
			fmt.Sprintf("Use version: \"%s\"", LatestVersion))
		return false
	}
	if n.Tag != "!!str" {
		c.add(CodeVersionNotString, n, "version", fmt.Sprintf("%s is not of type 'string'", v),
			fmt.Sprintf("Quote it: version: \"%s\"", v))
	}
	c.version = v
	return true
}

// ---- contracts ----

func (c *checker) buildContracts(b *build, cm *mapping) {
	for _, name := range cm.keys {
		e, _ := cm.get(name)
		path := "contracts." + name
		con := &Contract{Name: name, Pos: posOf(e.key)}
		cs := &contractSrc{c: con, typeNode: map[string]*yaml.Node{}, defNode: map[string]*yaml.Node{}}
		b.spec.Contracts[name] = con
		b.spec.ContractNames = append(b.spec.ContractNames, name)
		b.contracts[name] = cs
		fm := c.asMapping(e.val, path)
		if fm == nil {
			c.wrongType(cm, name, "contracts", "object")
			continue
		}
		fm.owner = e.key
		for _, fname := range fm.keys {
			fe, _ := fm.get(fname)
			fpath := path + "." + fname
			fld := &Field{Name: fname, Pos: posOf(fe.key)}
			con.Fields = append(con.Fields, fld)
			dm := c.asMapping(fe.val, fpath)
			if dm == nil {
				c.wrongType(fm, fname, path, "object")
				continue
			}
			dm.owner = fe.key
			cs.defNode[fname] = dm.node
			c.checkFields(dm, contractFieldFields, fpath)
			if t, ok := c.str(dm, "type", fpath, true); ok {
				fld.Type = t
				cs.typeNode[fname] = dm.valNode("type")
			} else if !dm.has("type") {
				hasKw := dm.has("values")
				for _, k := range schemaKeywords {
					hasKw = hasKw || (dm.has(k) && k != "description")
				}
				if !hasKw {
					c.add(CodeMissingField, dm.node, fpath, "'type' is a required property (in a contract field)",
						"Add required field(s): [type]")
				}
			}
			if e, ok := dm.get("values"); ok {
				if vs, ok := toAny(e.val).([]any); ok {
					fld.Values = vs
				} else {
					c.wrongType(dm, "values", fpath, "array")
				}
			}
			if v, ok := c.boolean(dm, "optional", fpath); ok && v {
				fld.Optional = true
			}
			if v, ok := c.boolean(dm, "required", fpath); ok && !v {
				fld.Optional = true
			}
			if v, ok := c.boolean(dm, "opaque", fpath); ok {
				fld.Opaque = v
			}
			// Keyword values are checked by BuildContracts (invalid-schema).
			for _, k := range schemaKeywords {
				e, ok := dm.get(k)
				if !ok {
					continue
				}
				if fld.Keywords == nil {
					fld.Keywords = map[string]any{}
				}
				fld.Keywords[k] = toAny(e.val)
			}
		}
	}
}

// ---- params, budgets, commands ----

// params decodes an `input` block: param → schema mapping.
func (c *checker) params(m *mapping, k, path string, fs *fieldSet) []*Param {
	pm, ok := c.object(m, k, path)
	if !ok {
		return nil
	}
	ppath := joinPath(path, k)
	var out []*Param
	for _, name := range pm.keys {
		e, _ := pm.get(name)
		p := &Param{Name: name, Pos: posOf(e.key)}
		out = append(out, p)
		dm := c.asMapping(e.val, ppath+"."+name)
		if dm == nil {
			c.wrongType(pm, name, ppath, "object")
			continue
		}
		dm.owner = e.key
		fp := ppath + "." + name
		// `required: [a, b]` is the JSON-Schema keyword (allowed in every
		// version and kept in the schema); `required: true` is ours.
		jsonRequired := false
		if e, ok := dm.get("required"); ok && resolve(e.val).Kind == yaml.SequenceNode && fs == paramFields {
			jsonRequired = true
		}
		useFS := fs
		if jsonRequired {
			useFS = paramFieldsJSONRequired
		}
		c.checkFields(dm, useFS, fp)
		p.Schema = map[string]any{}
		for _, kk := range dm.keys {
			switch kk {
			case "opaque", "default":
				continue
			case "required":
				if !jsonRequired {
					continue
				}
			}
			p.Schema[kk] = toAny(dm.valNode(kk))
		}
		if fs == workflowParamFields {
			if t, ok := c.enum(dm, "type", fp, []string{"string", "boolean", "integer", "number", "array", "object"}); ok {
				p.Type = t
			}
		} else if e, ok := dm.get("type"); ok {
			if isStr(e.val) {
				p.Type = e.val.Value
			} else if resolve(e.val).Kind != yaml.SequenceNode {
				c.wrongType(dm, "type", fp, "string")
			}
		}
		if v, ok := c.boolean(dm, "opaque", fp); ok {
			p.Opaque = v
		}
		if !jsonRequired {
			if v, ok := c.boolean(dm, "required", fp); ok {
				p.Required = v
			}
		}
		if e, ok := dm.get("default"); ok {
			p.Default = toAny(e.val)
			p.HasDefault = true
		}
	}
	return out
}

func (c *checker) budget(m *mapping, k, path string) *Budget {
	bm, ok := c.object(m, k, path)
	if !ok {
		return nil
	}
	bp := joinPath(path, k)
	c.checkFields(bm, budgetFields, bp)
	b := &Budget{}
	if v, ok := c.duration(bm, "ms", bp, time.Millisecond); ok {
		b.MS = v
	}
	if v, ok := c.number(bm, "usd", bp, 0); ok {
		b.USD = &v
	}
	if v, ok := c.integer(bm, "max_agent_dispatches", bp, 1); ok {
		b.MaxAgentDispatches = int(v)
	}
	if v, ok := c.integer(bm, "max_tokens", bp, 1); ok {
		b.Tokens = v
	}
	if v, ok := c.integer(bm, "tokens", bp, 1); ok {
		b.Tokens = v
	}
	return b
}

// command decodes the `run:` extension.
func (c *checker) command(m *mapping, k, path string) *Command {
	e, ok := m.get(k)
	if !ok || !c.since(Version02) {
		return nil
	}
	rp := joinPath(path, k)
	cmd := &Command{Pos: posOf(e.val)}
	n := resolve(e.val)
	setCmd := func(holder *mapping, key string, n *yaml.Node, p string) bool {
		n = resolve(n)
		switch {
		case isStr(n):
			if strings.TrimSpace(n.Value) == "" {
				holder.bad[key] = true
				c.add(CodeEmptyValue, n, p, "'' should be non-empty", "Give the command to run.")
				return false
			}
			cmd.Shell = n.Value
			return true
		case n.Kind == yaml.SequenceNode:
			argv, _, ok := c.strList(holder, key, strings.TrimSuffix(p, "."+key), true)
			if !ok {
				return false
			}
			if argv[0] == "" {
				c.add(CodeEmptyValue, resolve(n.Content[0]), p+".0", "'' should be non-empty", "The first item is the program to execute.")
				return false
			}
			cmd.Argv = argv
			return true
		default:
			holder.bad[key] = true
			c.add(CodeWrongType, n, p, fmt.Sprintf("%s is not of type 'string', 'array', 'object'", reprNode(n)),
				"Use a shell command string, a list of arguments, or {cmd, dir, env}.")
			return false
		}
	}
	if n.Kind == yaml.MappingNode {
		rm := c.asMapping(n, rp)
		rm.owner = e.key
		c.checkFields(rm, runFields, rp)
		ok := true
		if ce, has := rm.get("cmd"); has {
			ok = setCmd(rm, "cmd", ce.val, rp+".cmd")
		} else {
			ok = false
		}
		if d, has := c.str(rm, "dir", rp, false); has {
			cmd.Dir = d
		}
		if em, has := c.object(rm, "env", rp); has {
			cmd.Env = map[string]string{}
			for _, ek := range em.keys {
				if v, ok := c.str(em, ek, rp+".env", false); ok {
					cmd.Env[ek] = v
				}
			}
		}
		if !ok {
			m.bad[k] = true
			return nil
		}
		return cmd
	}
	if !setCmd(m, k, n, rp) {
		m.bad[k] = true
		return nil
	}
	return cmd
}

const noMinimum = -1.7976931348623157e308
