package specs

import (
	"fmt"
	"regexp"
	"strconv"
	"time"

	"gopkg.in/yaml.v3"
)

func (c *checker) buildFunction(b *build, fm *mapping, name string) {
	e, _ := fm.get(name)
	path := "functions." + name
	fn := &Function{Name: name, Pos: posOf(e.key)}
	b.spec.Functions[name] = fn
	b.spec.FunctionNames = append(b.spec.FunctionNames, name)
	m := c.asMapping(e.val, path)
	if m != nil {
		m.owner = e.key
	}
	fs := &fnSrc{m: m, fn: fn, pth: path}
	b.fns[name] = fs
	if m == nil {
		c.wrongType(fm, name, "functions", "object")
		fs.m = &mapping{node: e.val, entries: map[string]entry{}, bad: map[string]bool{}}
		return
	}
	c.checkFields(m, functionFields, path)
	modes := []string{"infer", "compute"}
	if c.since(Version02) {
		modes = append(modes, "gate")
	}
	if ok := m.has("mode"); ok {
		if v, ok := c.str(m, "mode", path, false); ok && v == "gate" && !c.since(Version02) {
			m.bad["mode"] = true
			c.add(CodeNeedsVersion, m.valNode("mode"), path+".mode",
				fmt.Sprintf("mode 'gate' requires IR version \"0.2\" or later; this spec is version \"%s\"", c.version),
				fmt.Sprintf("Use version: \"%s\"", LatestVersion))
		} else if v, ok := c.enum(m, "mode", path, modes); ok {
			fn.Mode = Mode(v)
		}
	}
	if v, ok := c.str(m, "intent", path, true); ok {
		fn.Intent = v
	}
	fn.Input = c.params(m, "input", path, paramFields)
	if v, ok := c.name(m, "output", path, false); ok {
		fn.Output = v
	}
	if srcs, nodes, _ := c.strList(m, "ensure", path, false); srcs != nil {
		for i, s := range srcs {
			if s == "" {
				c.add(CodeEmptyValue, nodes[i], path+".ensure", "'' should be non-empty", "Remove the empty ensure.")
				continue
			}
			c.compile(ExprEnsure, s, nodes[i], path+".ensure", "ensure", func(x *Expr) { fn.Ensure = append(fn.Ensure, x) })
		}
	}
	fn.Budget = c.budget(m, "budget", path)
	fn.Retries = 3
	if v, ok := c.integer(m, "retries", path, 1); ok {
		fn.Retries, fn.RetriesSet = int(v), true
	} else if m.has("retries") {
		fn.RetriesSet = true
	}
	if v, ok := c.name(m, "model", path, false); ok {
		fn.Model = v
	}
	if v, ok := c.duration(m, "timeout", path, time.Second); ok && c.since(Version02) {
		fn.Timeout = int(v)
	}
	if c.since(Version02) {
		if pats, nodes, _ := c.strList(m, "guardrails", path, false); pats != nil {
			fn.Guardrails = c.guardrails(pats, nodes, path+".guardrails", path+".guardrails")
		}
		if v, ok := c.boolean(m, "cache", path); ok {
			fn.Cache = v
		}
		if v, ok := c.enum(m, "on_timeout", path, []string{"kill", "approve", "revise"}); ok {
			fn.OnTimeout = v
		}
		if v, ok := c.enum(m, "approver", path, []string{"human", "any"}); ok {
			fn.Approver = v
		}
		fn.Run = c.command(m, "run", path)
	}
}

// guardrails compiles guardrail patterns, case-insensitive and multiline
// like the original. ipath is the list's schema path (an empty pattern is
// the original's schema error, minLength 1: path guardrails.<i>), spath its
// semantic path (an invalid regex is its semantic error: guardrails[<i>]).
func (c *checker) guardrails(pats []string, nodes []*yaml.Node, ipath, spath string) []*Guardrail {
	var out []*Guardrail
	for i, p := range pats {
		if p == "" {
			c.add(CodeEmptyGuardrail, nodes[i], ipath+"."+strconv.Itoa(i), "'' should be non-empty",
				fmt.Sprintf("guardrail[%d] is empty: remove it or give a regular expression.", i))
			continue
		}
		re, ok := c.reCache[p]
		if !ok {
			var err error
			re, err = compileGuardrail(p)
			if err != nil {
				// Report the error of the pattern as written (without the
				// (?im) flags we add).
				if _, rawErr := regexp.Compile(p); rawErr != nil {
					err = rawErr
				}
				c.add(CodeInvalidRegex, nodes[i], fmt.Sprintf("%s[%d]", spath, i), fmt.Sprintf("guardrail[%d] '%s' is not a valid regex: %v", i, p, err), "Fix the regular expression (Go RE2 syntax).")
				continue
			}
			if c.reCache == nil {
				c.reCache = map[string]*regexp.Regexp{}
			}
			c.reCache[p] = re // a Regexp is safe for concurrent use
		}
		out = append(out, &Guardrail{Pattern: p, Re: re})
	}
	return out
}

func (c *checker) buildFlow(b *build, flm *mapping, name string) {
	e, _ := flm.get(name)
	path := "flows." + name
	f := &Flow{Name: name, Pos: posOf(e.key)}
	b.spec.Flows[name] = f
	b.spec.FlowNames = append(b.spec.FlowNames, name)
	m := c.asMapping(e.val, path)
	if m != nil {
		m.owner = e.key
	}
	fs := &flowSrc{m: m, f: f, pth: path}
	b.flows[name] = fs
	if m == nil {
		c.wrongType(flm, name, "flows", "object")
		fs.m = &mapping{node: e.val, entries: map[string]entry{}, bad: map[string]bool{}}
		return
	}
	c.checkFields(m, flowFields, path)
	f.Input = c.params(m, "input", path, paramFields)
	if v, ok := c.name(m, "output", path, false); ok {
		f.Output = v
	}
	f.Budget = c.budget(m, "budget", path)
	if c.since(Version02) {
		if v, ok := c.integer(m, "max_rounds", path, 1); ok {
			f.MaxRounds = int(v)
		}
	}
	se, ok := m.get("steps")
	if !ok {
		return
	}
	sn := resolve(se.val)
	if sn.Kind != yaml.SequenceNode {
		c.wrongType(m, "steps", path, "array")
		return
	}
	if len(sn.Content) == 0 {
		m.bad["steps"] = true
		c.add(CodeEmptyValue, sn, path+".steps", "[] should be non-empty", "Add at least one step.")
		return
	}
	for i, it := range sn.Content {
		ss := c.buildStep(f, resolve(it), path+".steps."+strconv.Itoa(i), i)
		fs.steps = append(fs.steps, ss)
		f.Steps = append(f.Steps, ss.s)
	}
}

var (
	stepTypes    = []string{"function", "inline", "flow", "decompose", "parallel_dispatch", "pipeline"}
	policyValues = []string{"gate", "flag", "skip"}
)

func (c *checker) buildStep(f *Flow, n *yaml.Node, ipath string, idx int) *stepSrc {
	s := &Step{Pos: posOf(n)}
	ss := &stepSrc{s: s, idx: idx, ipath: ipath}
	m := c.asMapping(n, ipath)
	if m == nil {
		c.add(CodeWrongType, n, ipath, fmt.Sprintf("%s is not of type 'object'", reprNode(n)), "Each step is a mapping with at least an id.")
		ss.broken = true
		ss.m = &mapping{node: n, entries: map[string]entry{}, bad: map[string]bool{}}
		return ss
	}
	ss.m = m
	c.checkFields(m, stepFields, ipath)
	if v, ok := c.name(m, "id", ipath, true); ok {
		s.ID = v
	}
	sp := ss.spath(f.Name)
	if c.since(Version03) {
		if e, ok := m.get("type"); ok && isStr(e.val) && newerStepTypes[e.val.Value].what != "" {
			if !ss.unsupported { // judge: was reported already
				c.unsupported(newerStepTypes[e.val.Value], e.val, ipath+".type")
			}
			m.bad["type"] = true
			ss.unsupported = true
		} else if v, ok := c.enum(m, "type", ipath, stepTypes); ok {
			s.Type = v
		}
	}
	// An empty function, intent or flow is no step mode (the original's
	// semantic "exactly one of" rule reports it, see checkStep).
	if v, ok := c.name(m, "function", ipath, false); ok {
		s.Function = v
	}
	if c.since(Version02) {
		if v, ok := c.str(m, "intent", ipath, false); ok {
			s.Intent = v
		}
		if v, ok := c.name(m, "flow", ipath, false); ok {
			s.Flow = v
		}
		if v, ok := c.name(m, "agent", ipath, false); ok {
			s.Agent = v
		}
	}
	if im, ok := c.object(m, "inputs", ipath); ok {
		for _, k := range im.keys {
			v, ok := c.str(im, k, ipath+".inputs", false)
			if !ok {
				continue
			}
			s.Inputs = append(s.Inputs, Input{Name: k, Value: v, Pos: posOf(im.valNode(k))})
			ss.inputNodes = append(ss.inputNodes, im.valNode(k))
		}
	}
	if ids, nodes, _ := c.strList(m, "depends_on", ipath, false); ids != nil {
		for i := range ids {
			if c.badName(nodes[i], fmt.Sprintf("%s.depends_on.%d", ipath, i), ids[i]) {
				m.bad["depends_on"] = true
				ids, nodes = nil, nil
				break
			}
		}
		s.DependsOn, ss.dependNode = ids, nodes
	}
	if e, ok := m.get("output_schema"); ok {
		if sm, ok := toAny(e.val).(map[string]any); ok {
			s.OutputSchema = sm
		} else {
			c.wrongType(m, "output_schema", ipath, "object")
		}
	}
	if !c.since(Version02) {
		return ss
	}
	c.buildStepV02(m, ss, ipath, sp)
	if c.since(Version03) {
		c.buildStepV03(m, s, ipath)
		c.buildStages(m, ss, ipath, sp)
	}
	return ss
}

// buildStepV02 reads the step fields of version 0.2 (gates' routes,
// on_fail/next, skip_if, policy, ensure, retries, budget, guardrails, the
// iteration fields, cache, reasoning templates and run:) into ss.s.
func (c *checker) buildStepV02(m *mapping, ss *stepSrc, ipath, sp string) {
	s := ss.s
	for _, r := range []struct {
		k      string
		target *string
	}{{"on_approve", &s.OnApprove}, {"on_revise", &s.OnRevise}, {"on_kill", &s.OnKill}} {
		if v, ok := c.strOrNull(m, r.k, ipath); ok && !c.badName(m.valNode(r.k), joinPath(ipath, r.k), v) {
			*r.target = v
		} else if ok {
			m.bad[r.k] = true
		}
	}
	c.nullRoute(m, "on_fail", ipath, "on a failure once its attempts are spent")
	c.nullRoute(m, "next", ipath, "after a success")
	s.OnFail, _ = c.name(m, "on_fail", ipath, true)
	s.Next, _ = c.name(m, "next", ipath, true)
	c.expr(m, "skip_if", ipath, sp+".skip_if", ExprSkipIf, func(x *Expr) { s.SkipIf = x })
	s.SkipReason, _ = c.str(m, "skip_reason", ipath, false)
	s.Policy, _ = c.enum(m, "policy", ipath, policyValues)
	s.PolicyFallback, _ = c.enum(m, "policy_fallback", ipath, policyValues)
	if srcs, nodes, _ := c.strList(m, "ensure", ipath, false); srcs != nil {
		for i, src := range srcs {
			if src == "" {
				c.add(CodeEmptyValue, nodes[i], ipath+".ensure", "'' should be non-empty", "Remove the empty ensure.")
				continue
			}
			c.compile(ExprEnsure, src, nodes[i], sp+".ensure", "ensure", func(x *Expr) { s.Ensure = append(s.Ensure, x) })
		}
	}
	if v, ok := c.integer(m, "retries", ipath, 1); ok {
		s.Retries = int(v)
	}
	s.OutputContract, _ = c.name(m, "output_contract", ipath, false)
	s.Model, _ = c.name(m, "model", ipath, false)
	s.Budget = c.budget(m, "budget", ipath)
	if pats, nodes, _ := c.strList(m, "guardrails", ipath, false); pats != nil {
		s.Guardrails = c.guardrails(pats, nodes, ipath+".guardrails", sp+".guardrails")
		ss.guardNodes = nodes
	}
	if v, ok := c.integer(m, "max_iterations", ipath, 1); ok {
		s.MaxIterations = int(v)
	}
	c.expr(m, "exit_criterion", ipath, sp+".exit_criterion", ExprExitCriterion, func(x *Expr) { s.ExitCriterion = x })
	c.expr(m, "score_expr", ipath, sp+".score_expr", ExprScore, func(x *Expr) { s.ScoreExpr = x })
	c.expr(m, "accumulate", ipath, sp+".accumulate", ExprAccumulate, func(x *Expr) { s.Accumulate = x })
	c.expr(m, "accumulate_key", ipath, sp+".accumulate_key", ExprAccumulateKey, func(x *Expr) { s.AccumulateKey = x })
	s.Cache, _ = c.boolean(m, "cache", ipath)
	s.ReasoningTemplate = c.certTemplate(m, "reasoning_template", ipath)
	s.TaskReasoningTemplate = c.certTemplate(m, "task_reasoning_template", ipath)
	s.Run = c.command(m, "run", ipath)
	if m.has("judge") {
		s.Judge = c.judge(m, ipath, sp)
	}
}

// buildStepV03 reads the step fields of version 0.3 (the parallel_dispatch
// fields) into s.
func (c *checker) buildStepV03(m *mapping, s *Step, ipath string) {
	s.Source, _ = c.str(m, "source", ipath, false)
	if v, ok := c.integer(m, "max_concurrent", ipath, 1); ok {
		s.MaxConcurrent = int(v)
	}
	s.Isolation, _ = c.enum(m, "isolation", ipath, []string{"worktree", "branch", "none"})
	c.stepRequire(m, s, ipath)
	s.Merge, _ = c.enum(m, "merge", ipath, []string{"sequential_apply", "manual"})
	s.IntentTemplate, _ = c.str(m, "intent_template", ipath, false)
	// task_timeout: null is no timeout, as the original's schema allows.
	if e, ok := m.get("task_timeout"); ok && isNull(e.val) {
		delete(m.entries, "task_timeout")
	}
	if v, ok := c.duration(m, "task_timeout", ipath, time.Second); ok {
		s.TaskTimeout = int(v)
	}
	s.CaptureDiff, _ = c.boolean(m, "capture_diff", ipath)
	s.DeferAdvance, _ = c.boolean(m, "defer_advance", ipath)
	s.PreMergeVerify = c.preMergeVerify(m, ipath)
}

// preMergeVerify reads a step's pre_merge_verify as the original's schema
// takes it (oneOf: a list of non-empty command strings, or a string — one
// command or a $ reference); nil when absent or wrong.
func (c *checker) preMergeVerify(m *mapping, ipath string) any {
	const k = "pre_merge_verify"
	e, ok := m.get(k)
	if !ok {
		return nil
	}
	n := resolve(e.val)
	if isStr(n) {
		return n.Value
	}
	if n == nil || n.Kind != yaml.SequenceNode {
		m.bad[k] = true
		c.add(CodeWrongType, e.val, joinPath(ipath, k), reprNode(e.val)+" is not valid under any of the given schemas",
			"Give a list of commands, e.g. [\"go vet ./...\"], or a $ reference to one (\"$.input.gate\").")
		return nil
	}
	if _, _, ok := c.strList(m, k, ipath, false); !ok {
		return nil
	}
	for i, it := range n.Content {
		if resolve(it).Value == "" {
			m.bad[k] = true
			c.add(CodeEmptyValue, it, joinPath(ipath, k)+"."+strconv.Itoa(i), "'' should be non-empty", "Remove the empty command.")
			return nil
		}
	}
	return toAny(e.val)
}

// stepRequire reads a parallel_dispatch or pipeline step's require.
func (c *checker) stepRequire(m *mapping, s *Step, ipath string) {
	s.Require = c.requireValue(m, ipath)
}

// requireValue reads a require (a step's, or a stage's fanout's): all,
// any or a positive integer (given as a number or as a string); "" when
// absent or wrong.
func (c *checker) requireValue(m *mapping, ipath string) string {
	e, ok := m.get("require")
	if !ok {
		return ""
	}
	rn := resolve(e.val)
	switch {
	case rn.Kind == yaml.ScalarNode && rn.Tag == "!!int":
		if v, ok := c.integer(m, "require", ipath, 1); ok {
			return strconv.FormatInt(v, 10)
		}
	case isStr(rn) && (rn.Value == "all" || rn.Value == "any"):
		return rn.Value
	case isStr(rn):
		if v, err := strconv.Atoi(rn.Value); err == nil && v >= 1 {
			return strconv.Itoa(v)
		}
		m.bad["require"] = true
		c.add(CodeInvalidValue, rn, ipath+".require", fmt.Sprintf("'%s' is not one of ['all', 'any'] or a positive integer", rn.Value),
			"Allowed values: [all, any, N ≥ 1]")
	default:
		c.wrongType(m, "require", ipath, "string")
	}
	return ""
}

func (c *checker) buildWorkflow(b *build, wm *mapping) {
	path := "workflow"
	b.wf = wm
	w := &Workflow{Pos: posOf(b.root.keyNode("workflow"))}
	b.spec.Workflow = w
	c.checkFields(wm, workflowFields, path)
	if v, ok := c.str(wm, "name", path, true); ok {
		if !workflowNameRe.MatchString(v) {
			wm.bad["name"] = true
			c.add(CodeInvalidName, wm.valNode("name"), path+".name",
				fmt.Sprintf("'%s' does not match '^[a-z][a-z0-9-]*$'", v),
				"Use lowercase letters, digits and hyphens, starting with a letter (e.g. \"code-review\").")
		}
		w.Name = v
	}
	w.Description, _ = c.str(wm, "description", path, true)
	w.Input = c.params(wm, "input", path, workflowParamFields)
}

// nullRoute reports `next: ~` / `on_fail: ~` with what the field means:
// unlike a gate's on_approve/on_kill, these routes have no null form
// (leaving the field out is the default). The field is then dropped so the
// generic type error is not reported again.
func (c *checker) nullRoute(m *mapping, k, ipath, when string) {
	if e, ok := m.get(k); !ok || !isNull(e.val) {
		return
	}
	c.add(CodeWrongType, m.valNode(k), joinPath(ipath, k),
		fmt.Sprintf("%s: ~ (null) is not a step id: %s names the step the flow goes to %s", k, k, when),
		fmt.Sprintf("Remove '%s' to go on in order; null is only meaningful on a gate's on_approve/on_kill.", k))
	m.bad[k] = true
	delete(m.entries, k)
}
