package specs

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// Reasoning certificates (the original's STRAT-CERT): a step's
// reasoning_template, or a parallel_dispatch step's task_reasoning_template,
// is {sections: [{id, label, description}…], require_citations}. The
// original (spec.py _apply_cert_defaults, run on every step before the
// semantic checks) fills the default sections when there are none and
// require_citations false when it is absent, and rejects, as
// ir_semantic_error with a path relative to the template:
//
//	<field> must have at least one section                     <field>.sections
//	<field> section <i> must be a mapping, got <type>          <field>.sections[<i>]
//	<field> section <i> is missing required field '<name>'     <field>.sections[<i>]
//
// The template itself must be a mapping (its schema: type object).

// certDefaultSections are the original's CERT_DEFAULT_SECTIONS.
var certDefaultSections = []map[string]any{
	{"id": "premises", "label": "Premises",
		"description": "State every verifiable fact you are using. Each premise must cite a file:line."},
	{"id": "trace", "label": "Trace",
		"description": "Walk through the logic step by step. Reference premises by [P<n>] ID."},
	{"id": "conclusion", "label": "Conclusion",
		"description": "State your finding. Every claim must reference at least one premise."},
}

// certSectionFields are the keys every section must have.
var certSectionFields = []string{"id", "label", "description"}

// certTemplate checks the template under key k of step mapping m (schema
// path ipath) and returns it with the original's defaults applied; nil when
// it is absent or not a mapping.
func (c *checker) certTemplate(m *mapping, k, ipath string) any {
	e, ok := m.get(k)
	if !ok {
		return nil
	}
	tm := c.asMapping(e.val, joinPath(ipath, k))
	if tm == nil {
		c.wrongType(m, k, ipath, "object")
		return nil
	}
	out, _ := toAny(e.val).(map[string]any)
	sugg := "Give each section an id, a label and a description, e.g. {id: premises, label: Premises, description: \"What you observed.\"}."
	se, hasSections := tm.get("sections")
	switch {
	case !hasSections:
		sections := make([]any, len(certDefaultSections))
		for i, d := range certDefaultSections {
			sections[i] = map[string]any{"id": d["id"], "label": d["label"], "description": d["description"]}
		}
		out["sections"] = sections
	case !pyTruthy(se.val):
		c.add(CodeReasoningTemplate, se.val, k+".sections", k+" must have at least one section",
			"Remove sections to get the default ones (Premises, Trace, Conclusion), or "+lowerFirst(sugg))
	case resolve(se.val).Kind != yaml.SequenceNode:
		// The original iterates whatever it is given: a string or a
		// mapping yields strings.
		c.add(CodeReasoningTemplate, se.val, k+".sections[0]", k+" section 0 must be a mapping, got str", "Make sections a list. "+sugg)
	default:
		for i, sn := range resolve(se.val).Content {
			path := fmt.Sprintf("%s.sections[%d]", k, i)
			sm := resolve(sn)
			if sm.Kind != yaml.MappingNode {
				c.add(CodeReasoningTemplate, sn, path, fmt.Sprintf("%s section %d must be a mapping, got %s", k, i, pyTypeName(sn)), sugg)
				continue
			}
			have, _ := toAny(sm).(map[string]any)
			for _, f := range certSectionFields {
				if _, ok := have[f]; !ok {
					c.add(CodeReasoningTemplate, sn, path, fmt.Sprintf("%s section %d is missing required field '%s'", k, i, f), sugg)
				}
			}
		}
	}
	if _, ok := out["require_citations"]; !ok {
		out["require_citations"] = false
	}
	return out
}

// pyTruthy is Python's truth value of a YAML value.
func pyTruthy(n *yaml.Node) bool {
	n = resolve(n)
	switch n.Kind {
	case yaml.SequenceNode, yaml.MappingNode:
		return len(n.Content) > 0
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return false
		case "!!bool":
			return reprNode(n) == "True"
		case "!!int", "!!float":
			switch v := toAny(n).(type) {
			case int:
				return v != 0
			case int64:
				return v != 0
			case float64:
				return v != 0
			}
			return true
		}
		return n.Value != ""
	}
	return true
}

// pyTypeName is the Python type name of a YAML value.
func pyTypeName(n *yaml.Node) string {
	n = resolve(n)
	switch n.Kind {
	case yaml.SequenceNode:
		return "list"
	case yaml.MappingNode:
		return "dict"
	}
	switch n.Tag {
	case "!!null":
		return "NoneType"
	case "!!bool":
		return "bool"
	case "!!int":
		return "int"
	case "!!float":
		return "float"
	}
	return "str"
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return string(s[0]|0x20) + s[1:]
}
