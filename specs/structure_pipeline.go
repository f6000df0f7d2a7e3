package specs

import (
	"fmt"
	"strconv"
	"time"

	"gopkg.in/yaml.v3"
)

// The structure of a pipeline step's stages (0.3, the original's
// STRAT-WORKFLOW-PIPELINE, -STAGEOPTS, -ROUTE and -FANOUT): a list of
// stage mappings with the original's keys. The rules between stages are
// semantic (semantic_pipeline.go).

var (
	stageFields = &fieldSet{
		what: "a pipeline stage",
		fields: fields(Version03, "intent_template", "agent", "task_reasoning_template", "task_timeout",
			"when", "exit_when", "fanout", "join"),
		required: map[string][]string{Version01: {"intent_template"}},
	}
	stageFanoutFields = &fieldSet{
		what:     "a stage's fanout",
		fields:   fields(Version03, "max", "require"),
		required: map[string][]string{Version01: {"max"}},
	}
)

// buildStages reads a step's stages into ss.s.Stages (and the stage
// mappings into ss.stages). Whether the step may have them is checked
// with its kind.
func (c *checker) buildStages(m *mapping, ss *stepSrc, ipath, sp string) {
	e, ok := m.get("stages")
	if !ok {
		return
	}
	n := resolve(e.val)
	if n.Kind != yaml.SequenceNode {
		c.wrongType(m, "stages", ipath, "array")
		return
	}
	if len(n.Content) == 0 {
		m.bad["stages"] = true
		c.add(CodeEmptyValue, n, ipath+".stages", "[] should be non-empty",
			"Give the pipeline at least one stage: - {intent_template: \"… {item} …\"}.")
		return
	}
	for i, it := range n.Content {
		st := &Stage{Index: i, Pos: posOf(it)}
		ss.s.Stages = append(ss.s.Stages, st)
		path := ipath + ".stages." + strconv.Itoa(i)
		stm := c.asMapping(it, path)
		ss.stages = append(ss.stages, stm)
		if stm == nil {
			c.add(CodeWrongType, resolve(it), path, fmt.Sprintf("%s is not of type 'object'", reprNode(resolve(it))),
				"Each stage is a mapping: {intent_template: \"… {item} …\", agent: claude}.")
			continue
		}
		c.buildStage(stm, st, path, fmt.Sprintf("%s.stages[%d]", sp, i))
	}
}

// buildStage reads one stage mapping.
func (c *checker) buildStage(m *mapping, st *Stage, path, spath string) {
	c.checkFields(m, stageFields, path)
	st.IntentTemplate, _ = c.str(m, "intent_template", path, true)
	st.Agent, _ = c.name(m, "agent", path, false)
	st.TaskReasoningTemplate = c.certTemplate(m, "task_reasoning_template", path)
	if v, ok := c.duration(m, "task_timeout", path, time.Second); ok {
		st.TaskTimeout = int(v)
	}
	when := ExprWhen
	if st.Index == 0 {
		when = ExprWhenFirst
	}
	if src, ok := c.str(m, "when", path, true); ok {
		c.compile(when, src, m.valNode("when"), spath+".when", "when", func(x *Expr) { st.When = x })
	}
	c.expr(m, "exit_when", path, spath+".exit_when", ExprExitWhen, func(x *Expr) { st.ExitWhen = x })
	st.Join, _ = c.boolean(m, "join", path)
	if fm, ok := c.object(m, "fanout", path); ok {
		fp := path + ".fanout"
		c.checkFields(fm, stageFanoutFields, fp)
		fo := &StageFanout{Require: "all"}
		if v, ok := c.integer(fm, "max", fp, 1); ok {
			fo.Max = int(v)
		}
		if r := c.requireValue(fm, fp); r != "" {
			fo.Require = r
		}
		st.Fanout = fo // kept when max is wrong, so the region's rules do not cascade
	}
}
