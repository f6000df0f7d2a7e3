package specs

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// The semantic rules of a pipeline step: the original's (source and
// stages required, no step-level intent_template or reasoning_template,
// one fanout and one join around at least one lane stage, no when or
// exit_when inside the fan-out region, no exit_when before it) and ours
// (a template naming {prev} in the first stage, {prevs} outside a join or
// {source} outside the fan-out region: the original renders such a
// template as written, placeholders and all).

// pipelineFields checks a pipeline step's fields and stages.
func (sc *stepCheck) pipelineFields() {
	c, s, m, sp, label, forbid := sc.c, sc.s, sc.m, sc.sp, sc.label, sc.forbid
	lower := strings.ToLower(label[:1]) + label[1:]
	for _, k := range []string{"source", "stages"} {
		if !m.has(k) || emptyStr(m, k) {
			c.add(CodeParallelRequires, m.valNode(k), sp+"."+k, fmt.Sprintf("pipeline %s requires '%s'", lower, k),
				"A pipeline step needs source (a $ reference to the item list) and stages (each with an intent_template).")
		}
	}
	forbid(CodeParallelField, "intent_template", fmt.Sprintf("pipeline %s must not have a step-level 'intent_template' — it lives per-stage in 'stages'", lower),
		"Move the template into the stages: stages: [{intent_template: \"… {item} …\"}].")
	forbid(CodeParallelRequires, "reasoning_template", fmt.Sprintf("pipeline %s must not have 'reasoning_template'", lower),
		"Use task_reasoning_template (on the step or on a stage) for per-task reasoning.")
	if len(s.Stages) == 0 {
		return
	}
	sc.pipelineRegion()
	for i, st := range s.Stages {
		if stm := sc.ss.stages[i]; stm != nil {
			sc.stageTemplate(st, stm)
		}
	}
}

// pipelineRegion checks the fan-out region: exactly one fanout stage and
// one join stage, the join after the fanout with a lane stage between
// them, no when/exit_when in the region and no exit_when before it.
func (sc *stepCheck) pipelineRegion() {
	c, s, m, sp := sc.c, sc.s, sc.m, sc.sp
	var splits, joins []int
	for i, st := range s.Stages {
		if st.Fanout != nil {
			splits = append(splits, i)
		}
		if st.Join {
			joins = append(joins, i)
		}
	}
	if len(splits) == 0 && len(joins) == 0 {
		return
	}
	at := func(i int, key string) *yaml.Node {
		if stm := sc.ss.stages[i]; stm != nil && stm.has(key) {
			return stm.keyNode(key)
		}
		return m.valNode("stages")
	}
	stagePath := func(i int) string { return fmt.Sprintf("%s.stages[%d]", sp, i) }
	if len(splits) != 1 || len(joins) != 1 {
		n, i := m.valNode("stages"), -1
		switch {
		case len(splits) > 1:
			i = splits[1]
			n = at(i, "fanout")
		case len(joins) > 1:
			i = joins[1]
			n = at(i, "join")
		case len(splits) == 1:
			i = splits[0]
			n = at(i, "fanout")
		default:
			i = joins[0]
			n = at(i, "join")
		}
		c.add(CodePipelineStage, n, stagePath(i),
			fmt.Sprintf("pipeline step '%s' must have exactly one `fanout` stage and exactly one `join` stage (found %d fanout, %d join)", s.ID, len(splits), len(joins)),
			"A fan-out is a stage with fanout: {max: N}, then the lane stages, then a stage with join: true that reduces them ({prevs}).")
		return
	}
	f, j := splits[0], joins[0]
	switch {
	case j <= f:
		c.add(CodePipelineStage, at(j, "join"), stagePath(j),
			fmt.Sprintf("pipeline step '%s' `join` stage (index %d) must come after the `fanout` stage (index %d)", s.ID, j, f),
			"Order the stages: fanout stage, lane stage(s), join stage.")
		return
	case j-f < 2:
		c.add(CodePipelineStage, at(j, "join"), stagePath(j),
			fmt.Sprintf("pipeline step '%s' must have at least one per-lane stage between `fanout` (index %d) and `join` (index %d)", s.ID, f, j),
			"Put the stage that runs once per element of the fanout's list between the fanout stage and the join.")
		return
	}
	for i := f; i <= j; i++ {
		for _, k := range []string{"when", "exit_when"} {
			if stm := sc.ss.stages[i]; stm != nil && stm.has(k) {
				c.add(CodePipelineStage, stm.keyNode(k), stagePath(i)+"."+k,
					fmt.Sprintf("pipeline step '%s' stage %d is inside the fanout region (fanout..join) and may not carry `when`/`exit_when`", s.ID, i),
					"Route before the fanout stage (when) or after the join (when, exit_when).")
			}
		}
	}
	for i := 0; i < f; i++ {
		if stm := sc.ss.stages[i]; stm != nil && stm.has("exit_when") {
			c.add(CodePipelineStage, stm.keyNode("exit_when"), stagePath(i)+".exit_when",
				fmt.Sprintf("pipeline step '%s' stage %d has `exit_when` before a fanout region — early exit there would skip the whole region", s.ID, i),
				"Use when on the stage instead, or move the exit_when after the join.")
		}
	}
}

// stageNames are the template names each stage role binds besides item
// (and a dict item's keys).
var stageNames = map[string]map[string]bool{
	"plain": {"prev": true, "prev_raw": true},
	"split": {"prev": true, "prev_raw": true},
	"lane":  {"prev": true, "prev_raw": true, "source": true, "source_raw": true},
	"join":  {"prevs": true, "prevs_raw": true, "source": true, "source_raw": true},
}

// reservedNames are the names a stage template may only use where they
// are bound: anything else is taken for a key of the item.
var reservedNames = []string{"prev", "prev_raw", "prevs", "prevs_raw", "source", "source_raw"}

// stageTemplate checks the names a stage's intent_template uses.
func (sc *stepCheck) stageTemplate(st *Stage, stm *mapping) {
	fields, ok := TemplateFields(st.IntentTemplate)
	if !ok || st.IntentTemplate == "" {
		return
	}
	role := sc.s.StageRole(st.Index)
	if st.Join { // also outside a well-formed region: no cascade from its shape
		role = "join"
	}
	bound := stageNames[role]
	path := fmt.Sprintf("%s.stages[%d].intent_template", sc.sp, st.Index)
	for _, f := range fields {
		reserved := false
		for _, r := range reservedNames {
			reserved = reserved || f.Name == r
		}
		if !reserved || bound[f.Name] && !(st.Index == 0 && strings.HasPrefix(f.Name, "prev")) {
			continue
		}
		var why, sugg string
		switch {
		case strings.HasPrefix(f.Name, "prevs"):
			why, sugg = "only a join stage has {prevs} (the results of its lanes)", "Use {prev} for the previous stage's result."
		case strings.HasPrefix(f.Name, "prev"):
			why, sugg = "the first stage has no previous stage", "Use {item} (the source item) in the first stage."
		default:
			why, sugg = "only lane and join stages of a fan-out have {source} (the item that was split)", "Use {item} outside a fan-out."
		}
		if role == "join" && strings.HasPrefix(f.Name, "prev") && !strings.HasPrefix(f.Name, "prevs") {
			why, sugg = "a join stage has several predecessors: their results are {prevs}", "Use {prevs} (a JSON list of the lanes' results)."
		}
		sc.c.add(CodePipelineStage, stm.valNode("intent_template"), path,
			fmt.Sprintf("stage %d of pipeline step '%s' uses {%s}, but %s; the original would send the template unrendered", st.Index, sc.s.ID, f.Name, why), sugg)
	}
}
