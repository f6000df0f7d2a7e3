package specs

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

var (
	parallelOnlyFields = []string{"source", "isolation", "require", "merge", "task_reasoning_template",
		"task_timeout", "max_concurrent", "intent_template", "capture_diff", "defer_advance", "pre_merge_verify"}
	iterationFields = []string{"max_iterations", "exit_criterion", "score_expr", "accumulate", "accumulate_key"}
)

// checkStep runs the semantic rules of one step and fills its effective
// execution fields: its kind, its function, the fields its kind allows, the
// rules of gates and of other steps, its routes, the references in skip_if
// and source, result fields against its output contract, opaque inputs in
// an inline intent and its output_schema.
func (c *checker) checkStep(b *build, fc *flowCtx, ss *stepSrc) {
	sc := newStepCheck(c, b, fc, ss)
	sc.kind()
	sc.resolveFunction()
	if sc.kindKnown {
		sc.kindFields()
	}
	switch {
	case sc.gateKnown && sc.isGate:
		sc.gateRules()
	case sc.gateKnown:
		sc.nonGateRules()
	}
	if sc.kindKnown && sc.s.Kind == KindJudge {
		sc.judgeRules()
	}
	if !sc.isGate { // a gate's on_fail and next are reported as gate-step-field
		sc.routes()
	}
	sc.references()
	sc.resultFields()
	sc.opaqueIntent()
	sc.outputSchema()
	c.normalizeStep(sc.s)
}

// stepCheck is one step under checkStep: where it is, and what the earlier
// rules learnt about it.
type stepCheck struct {
	c     *checker
	b     *build
	fc    *flowCtx
	ss    *stepSrc
	s     *Step
	m     *mapping
	f     *Flow
	sp    string // the step's dotted path
	label string // "Step 'id'", or "Step N" for a step without an id
	// kindKnown: the step's kind is known (its type and mode keys are
	// sound); no rule cascades from a kind that is not.
	kindKnown bool
	// isGate: the step's function is a gate; gateKnown: whether it is a
	// gate is known (function resolved, mode valid).
	isGate, gateKnown bool
}

func newStepCheck(c *checker, b *build, fc *flowCtx, ss *stepSrc) *stepCheck {
	sc := &stepCheck{c: c, b: b, fc: fc, ss: ss, s: ss.s, m: ss.m, f: fc.fls.f}
	sc.sp = ss.spath(sc.f.Name)
	sc.label = fmt.Sprintf("Step '%s'", sc.s.ID)
	if sc.s.ID == "" {
		sc.label = fmt.Sprintf("Step %d", ss.idx)
	}
	return sc
}

// forbid reports key when the step has it.
func (sc *stepCheck) forbid(code, key, msg, sugg string) {
	if sc.m.has(key) {
		sc.c.add(code, sc.m.keyNode(key), sc.sp+"."+key, msg, sugg)
	}
}

// kind sets the step's Kind from its type and its mode keys (function,
// intent, flow), and kindKnown.
func (sc *stepCheck) kind() {
	c, ss, s, m, sp, label, forbid := sc.c, sc.ss, sc.s, sc.m, sc.sp, sc.label, sc.forbid
	// A mode key with an empty value is no mode (the original tests them
	// for truth); it is named in the step-mode message.
	var modeKeys, emptyKeys []string
	for _, k := range []string{"function", "intent", "flow", "judge"} {
		switch {
		case emptyStr(m, k):
			emptyKeys = append(emptyKeys, k)
		case m.has(k):
			modeKeys = append(modeKeys, k)
		}
	}
	// A bad type was reported as invalid-value, and a step of a newer
	// release as unsupported; do not cascade from them.
	sc.kindKnown = !m.bad["type"] && !ss.unsupported
	switch typ := s.Type; {
	case ss.unsupported:
	case typ == "decompose":
		s.Kind = KindDecompose
		for _, k := range []string{"function", "flow", "judge"} {
			if m.has(k) {
				forbid(CodeStepMode, k, fmt.Sprintf("%s is a decompose step and must not have '%s'", label, k),
					"A decompose step is an agent step with intent, agent and output_contract.")
			}
		}
	case typ == "parallel_dispatch":
		s.Kind = KindParallelDispatch
		for _, k := range []string{"function", "intent", "flow", "judge"} {
			if m.has(k) {
				forbid(CodeStepMode, k, fmt.Sprintf("%s is a parallel_dispatch step and must not have '%s'", label, k),
					"A parallel_dispatch step takes source and intent_template.")
			}
		}
	case typ == "pipeline":
		s.Kind = KindPipeline
		for _, k := range []string{"function", "intent", "flow"} {
			if m.has(k) {
				forbid(CodeStepMode, k, fmt.Sprintf("%s is a pipeline step and must not have '%s'", label, k),
					"A pipeline step takes source and stages, each stage with its intent_template.")
			}
		}
	default:
		if !sc.kindKnown {
			break
		}
		if len(modeKeys) != 1 {
			sc.kindKnown = false
			found := "none"
			if len(modeKeys) > 0 {
				found = strings.Join(modeKeys, ", ")
			}
			for _, k := range emptyKeys {
				found += fmt.Sprintf("; '%s' is empty", k)
			}
			n := m.node
			switch {
			case len(modeKeys) > 1:
				n = m.keyNode(modeKeys[1])
			case len(emptyKeys) > 0:
				n = m.valNode(emptyKeys[0])
			}
			c.add(CodeStepMode, n, sp, fmt.Sprintf("%s must have exactly one of function, intent, flow, or judge (found: %s)", label, found),
				"Give the step exactly one of function (a named function), intent (an inline step), flow (a sub-flow) or judge (predicates to judge).")
			break
		}
		switch modeKeys[0] {
		case "function":
			s.Kind = KindFunction
		case "intent":
			s.Kind = KindInline
		case "flow":
			s.Kind = KindFlow
		case "judge":
			s.Kind = KindJudge
		}
		if s.Type != "" && s.Type != string(s.Kind) {
			c.add(CodeStepMode, m.valNode("type"), sp+".type",
				fmt.Sprintf("%s has type '%s' but is a %s step (it has '%s')", label, s.Type, s.Kind, modeKeys[0]),
				fmt.Sprintf("Use type: %s, or remove type.", s.Kind))
		}
	}
}

// resolveFunction resolves a function step's function, then isGate and
// gateKnown.
func (sc *stepCheck) resolveFunction() {
	c, b, s, m, sp, label := sc.c, sc.b, sc.s, sc.m, sc.sp, sc.label
	if sc.kindKnown && s.Kind == KindFunction && s.Function != "" {
		if fs := b.fns[s.Function]; fs != nil {
			s.Fn = fs.fn
		} else {
			sugg := c.didYouMean(s.Function, b.spec.FunctionNames)
			if sugg == "" {
				sugg = "Define it under functions:"
			}
			c.add(CodeUndefinedFunction, m.valNode("function"), sp+".function",
				fmt.Sprintf("%s references undefined function '%s'", label, s.Function), sugg)
		}
	}
	sc.isGate = s.Fn != nil && s.Fn.Mode == ModeGate
	// gateKnown: we know whether the step is a gate (function resolved, mode valid).
	sc.gateKnown = sc.kindKnown && (s.Kind != KindFunction || (s.Fn != nil && s.Fn.Mode != ""))
}

// kindFields are the fields each kind of step may or must have.
func (sc *stepCheck) kindFields() {
	c, b, s, m, sp, label, forbid := sc.c, sc.b, sc.s, sc.m, sc.sp, sc.label, sc.forbid
	switch s.Kind {
	case KindFunction:
		for _, k := range []string{"ensure", "retries", "output_contract", "model", "budget", "guardrails", "reasoning_template"} {
			if m.has(k) {
				forbid(CodeFunctionStepField, k, fmt.Sprintf("'%s' must be on the function, not the step (%s)", k, strings.ToLower(label[:1])+label[1:]),
					fmt.Sprintf("Move '%s' to functions.%s.", k, s.Function))
			}
		}
	case KindFlow:
		if s.Flow != "" && b.flows[s.Flow] == nil {
			sugg := c.didYouMean(s.Flow, b.spec.FlowNames)
			if sugg == "" {
				sugg = "Defined flows: " + shortList(b.spec.FlowNames, 10)
			}
			c.add(CodeUndefinedFlow, m.valNode("flow"), sp+".flow",
				fmt.Sprintf("%s references undefined flow '%s'", label, s.Flow), sugg)
		}
		if m.has("agent") {
			forbid(CodeFlowStepField, "agent", fmt.Sprintf("%s: agent must not be set (sub-flow steps define their own)", label), "Remove agent.")
		}
		for _, k := range []string{"retries", "model", "budget", "guardrails", "reasoning_template"} {
			if m.has(k) {
				forbid(CodeFlowStepField, k, fmt.Sprintf("%s is a flow step and must not have '%s'", label, k),
					"Flow steps run once; put execution settings on the child flow's steps.")
			}
		}
	case KindDecompose:
		for _, k := range []string{"agent", "intent", "output_contract"} {
			if k == "agent" && m.has("run") {
				continue // a decompose step with run: prints its task graph
			}
			if !m.has(k) || emptyStr(m, k) {
				c.add(CodeParallelRequires, m.valNode(k), sp+"."+k, fmt.Sprintf("decompose %s requires '%s'", strings.ToLower(label), k),
					"A decompose step needs intent, output_contract, and agent (or a run: command that prints the task graph).")
			}
		}
	case KindParallelDispatch:
		for _, k := range []string{"source", "intent_template"} {
			if !m.has(k) || emptyStr(m, k) {
				c.add(CodeParallelRequires, m.valNode(k), sp+"."+k, fmt.Sprintf("parallel_dispatch %s requires '%s'", strings.ToLower(label), k),
					"A parallel_dispatch step needs source (a $ reference to the task list) and intent_template.")
			}
		}
		if m.has("reasoning_template") {
			forbid(CodeParallelRequires, "reasoning_template", fmt.Sprintf("parallel_dispatch %s must not have 'reasoning_template'", strings.ToLower(label)),
				"Use task_reasoning_template for per-task reasoning.")
		}
	case KindPipeline:
		sc.pipelineFields()
	}
	if s.Kind != KindPipeline && m.has("stages") {
		forbid(CodeParallelField, "stages", fmt.Sprintf("%s has 'stages' but is not a pipeline step", label),
			"Remove it, or make the step type: pipeline (IR 0.3).")
	}
	if !s.FansOut() {
		for _, k := range parallelOnlyFields {
			if m.has(k) {
				forbid(CodeParallelField, k, fmt.Sprintf("%s has '%s' but is not a parallel_dispatch step", label, k),
					"Remove it, or make the step type: parallel_dispatch (IR 0.3).")
			}
		}
	}
	if s.Kind == KindDecompose || s.FansOut() {
		for _, k := range iterationFields {
			if m.has(k) {
				forbid(CodeIterationField, k, fmt.Sprintf("%s is a %s step and must not have '%s'", label, s.Kind, k),
					"Iterations are not available on decompose, parallel_dispatch or pipeline steps.")
			}
		}
	}
	if s.Kind != KindInline && s.Kind != KindDecompose && !s.FansOut() {
		if m.has("run") {
			forbid(CodeRunField, "run", fmt.Sprintf("%s has 'run' but is not an inline step", label),
				"Put run on an inline step (with intent) or on a compute function.")
		}
	}
	if s.OutputContract != "" && b.spec.Contracts[s.OutputContract] == nil && s.Kind != KindFunction {
		c.undefinedContract(b, m.valNode("output_contract"), sp+".output_contract",
			fmt.Sprintf("%s output_contract '%s' not defined", label, s.OutputContract), s.OutputContract)
	}
}

// nonGateRules are the rules of a step that is not a gate: no gate routing
// or policy, loop fields together, an on_fail that can trigger, cache only
// on compute-function steps.
func (sc *stepCheck) nonGateRules() {
	c, b, s, m, sp, label, forbid := sc.c, sc.b, sc.s, sc.m, sc.sp, sc.label, sc.forbid
	for _, k := range []string{"on_approve", "on_revise", "on_kill", "policy", "policy_fallback"} {
		if m.has(k) {
			forbid(CodeNotAGate, k, fmt.Sprintf("%s is not a gate step but has '%s' set", label, k),
				"Gate routing and policies only apply to steps whose function has mode: gate.")
		}
	}
	if s.Kind != KindDecompose && !s.FansOut() {
		if m.has("exit_criterion") && !m.has("max_iterations") {
			c.add(CodeIterationField, m.keyNode("exit_criterion"), sp+".exit_criterion", fmt.Sprintf("%s has exit_criterion but no max_iterations", label), "Add max_iterations.")
		}
		if m.has("score_expr") && !m.has("max_iterations") {
			c.add(CodeIterationField, m.keyNode("score_expr"), sp+".score_expr", fmt.Sprintf("%s has score_expr but no max_iterations", label), "Add max_iterations.")
		}
		if m.has("accumulate") && !m.has("max_iterations") {
			c.add(CodeIterationField, m.keyNode("accumulate"), sp+".accumulate", fmt.Sprintf("%s has accumulate but no max_iterations", label), "Add max_iterations.")
		}
		if m.has("accumulate_key") && !m.has("accumulate") {
			c.add(CodeIterationField, m.keyNode("accumulate_key"), sp+".accumulate_key", fmt.Sprintf("%s has accumulate_key but no accumulate", label), "Add accumulate.")
		}
	}
	if m.has("on_fail") && s.Kind != KindDecompose && !s.FansOut() {
		// The original counts a reasoning_template as a check only on
		// claude-agent steps (agent unset or starting with "claude"):
		// other agents skip the certificate. A run: command (ours) can
		// fail, so it counts too.
		cert := m.has("reasoning_template") && certChecked(s.Agent)
		triggers := m.has("ensure") || m.has("guardrails") || m.has("output_schema") || cert || m.has("run")
		if s.Fn != nil {
			triggers = triggers || s.Fn.Run != nil || fnHas(b, s.Function, "ensure") || fnHas(b, s.Function, "guardrails")
		}
		if !triggers {
			sugg := "Add ensure, guardrails or output_schema, or remove on_fail."
			if m.has("reasoning_template") {
				sugg = fmt.Sprintf("A reasoning_template is only checked on claude steps, not with agent '%s'. ", s.Agent) + sugg
			}
			c.add(CodeOnFailUnreachable, m.keyNode("on_fail"), sp+".on_fail",
				fmt.Sprintf("%s has on_fail but no ensure/guardrails — on_fail can never trigger", label), sugg)
		}
	}
	if s.Cache {
		ok := s.Kind == KindFunction && s.Fn != nil && s.Fn.Mode == ModeCompute &&
			!m.has("max_iterations") && !m.has("accumulate") && !m.has("next")
		if !ok {
			c.add(CodeCacheField, m.keyNode("cache"), sp+".cache",
				fmt.Sprintf("%s has 'cache: true' but only compute-function steps without loops or next may be cached", label),
				"Remove cache, or use a compute function without max_iterations/accumulate/next.")
		}
	}
}

// routes checks the targets of on_fail and next.
func (sc *stepCheck) routes() {
	c, fc, m, sp, label := sc.c, sc.fc, sc.m, sc.sp, sc.label
	for _, k := range []string{"on_fail", "next"} {
		if t, ok := c.strOrNullQuiet(m, k); ok && t != "" {
			if _, ok := fc.ids[t]; !ok {
				c.undefinedStep(fc, m.valNode(k), sp+"."+k, fmt.Sprintf("%s %s targets undefined step '%s'", label, k, t), t)
			}
		}
	}
}

// references checks the $ references in skip_if and source.
func (sc *stepCheck) references() {
	c, fc, s, m, sp := sc.c, sc.fc, sc.s, sc.m, sc.sp
	if s.SkipIf != nil {
		for _, r := range s.SkipIf.Refs() {
			c.checkRef(fc, r, m.valNode("skip_if"), sp+".skip_if", "skip_if")
		}
	}
	if s.Source != "" {
		if strings.HasPrefix(s.Source, "$") {
			c.checkRef(fc, s.Source, m.valNode("source"), sp+".source", "source")
		} else {
			c.add(CodeBadRef, m.valNode("source"), sp+".source",
				fmt.Sprintf("source '%s' is not a $ reference", s.Source), "Use $.steps.<id>.output.<field> or $.input.<name>.")
		}
	}
}

// resultFields checks the result fields that ensure, exit_criterion,
// score_expr and accumulate read against the step's output contract.
func (sc *stepCheck) resultFields() {
	c, b, s, sp := sc.c, sc.b, sc.s, sc.sp
	var con *Contract
	switch s.Kind {
	case KindFunction:
		if s.Fn != nil {
			con = b.spec.Contracts[s.Fn.Output]
		}
	case KindInline, KindDecompose:
		con = b.spec.Contracts[s.OutputContract]
	}
	if con != nil && sc.kindKnown {
		if s.Kind != KindFunction {
			for _, e := range s.Ensure {
				c.checkResultPaths(e, con, sp+".ensure", "ensure")
			}
		}
		c.checkResultPaths(s.ExitCriterion, con, sp+".exit_criterion", "exit_criterion")
		c.checkResultPaths(s.ScoreExpr, con, sp+".score_expr", "score_expr")
		c.checkResultPaths(s.Accumulate, con, sp+".accumulate", "accumulate")
	}
}

// opaqueIntent checks that an inline step's intent does not interpolate
// opaque inputs.
func (sc *stepCheck) opaqueIntent() {
	c, fc, s, m, sp, label, f := sc.c, sc.fc, sc.s, sc.m, sc.sp, sc.label, sc.f
	if s.Kind == KindInline && s.Intent != "" {
		opaque := map[string]bool{}
		bound := map[string]bool{}
		for _, in := range s.Inputs {
			bound[in.Name] = true
			if r, _, ok := parseRef(in.Value); ok && r.input != "" {
				if p := fc.inputs[r.input]; p != nil && p.Opaque {
					opaque[in.Name] = true
				}
			}
		}
		for _, p := range f.Input {
			if p.Opaque && !bound[p.Name] {
				opaque[p.Name] = true
			}
		}
		c.checkOpaqueInline(s.Intent, opaque, m.valNode("intent"), sp+".intent", strings.ToLower(label[:1])+label[1:])
	}
}

// outputSchema compiles the step's output_schema (a gate's is reported
// elsewhere).
func (sc *stepCheck) outputSchema() {
	c, s, m, sp, label := sc.c, sc.s, sc.m, sc.sp, sc.label
	if s.OutputSchema != nil && !(sc.isGate && sc.gateKnown) {
		sch, err := NewSchema(s.OutputSchema)
		if err != nil {
			c.add(CodeInvalidSchema, schemaErrNode(m.valNode("output_schema"), err.Error()), sp+".output_schema",
				fmt.Sprintf("%s output_schema is not a valid JSON Schema: %v", label, err), "Fix the schema (JSON Schema draft 2020-12).")
		} else {
			s.Schema = sch
		}
	}
}

// strOrNullQuiet reads a string-or-null value without reporting (the
// structural stage already did).
func (c *checker) strOrNullQuiet(m *mapping, k string) (string, bool) {
	e, ok := m.get(k)
	if !ok || m.bad[k] || !isStr(e.val) {
		return "", false
	}
	return e.val.Value, true
}

// emptyStr reports whether k is present with the empty string as value.
func emptyStr(m *mapping, k string) bool {
	e, ok := m.get(k)
	return ok && isStr(e.val) && e.val.Value == ""
}

// certChecked reports whether the original checks a step's
// reasoning_template, for its on_fail rule (spec.py: agent unset, or a name
// starting with "claude", e.g. "claude:read-only-reviewer").
func certChecked(agent string) bool {
	return agent == "" || strings.HasPrefix(agent, "claude")
}

func fnHas(b *build, name, k string) bool {
	fs := b.fns[name]
	return fs != nil && fs.m.has(k)
}

// normalizeStep fills the effective execution fields and defaults.
func (c *checker) normalizeStep(s *Step) {
	switch s.Kind {
	case KindFunction:
		if fn := s.Fn; fn != nil {
			s.Intent = fn.Intent
			s.Ensure = fn.Ensure
			s.Retries = fn.Retries
			s.Guardrails = fn.Guardrails
			s.Model = fn.Model
			s.Budget = fn.Budget
			s.OutputContract = fn.Output
		}
	case KindInline:
		if s.Retries == 0 {
			s.Retries = 1
		}
	case KindFlow:
		s.Retries = 1
	case KindJudge:
		if s.Retries == 0 {
			s.Retries = 1
		}
	case KindDecompose:
		if s.Retries == 0 {
			s.Retries = 2
		}
	case KindParallelDispatch, KindPipeline:
		if s.Retries == 0 {
			s.Retries = 2
		}
		if s.MaxConcurrent == 0 {
			s.MaxConcurrent = 3
		}
		if s.Isolation == "" {
			s.Isolation = "worktree"
		}
		if s.Require == "" {
			s.Require = "all"
		}
		if s.Merge == "" {
			s.Merge = "sequential_apply"
		}
	}
}

var schemaPointerRe = regexp.MustCompile(`at '(/[^']*)'`)

// schemaErrNode maps the first JSON pointer of a schema error ("at '/a/b'")
// back to the node it names inside the schema; root when it cannot.
func schemaErrNode(root *yaml.Node, msg string) *yaml.Node {
	mm := schemaPointerRe.FindStringSubmatch(msg)
	if mm == nil {
		return root
	}
	n := resolve(root)
	for _, tok := range strings.Split(mm[1], "/")[1:] {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		var next *yaml.Node
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if resolve(n.Content[i]).Value == tok {
					next = resolve(n.Content[i+1])
				}
			}
		case yaml.SequenceNode:
			if idx, err := strconv.Atoi(tok); err == nil && idx >= 0 && idx < len(n.Content) {
				next = resolve(n.Content[idx])
			}
		}
		if next == nil {
			return n
		}
		n = next
	}
	return n
}
