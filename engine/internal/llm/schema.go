package llm

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ObjectRoot returns schema itself when it describes an object, else the
// wrapper {type: object, properties: {value: schema}, required: [value]}
// (providers need an object root) and wrapped=true; the caller unwraps the
// answer's "value". A nil schema stays nil.
func ObjectRoot(schema map[string]any) (map[string]any, bool) {
	if schema == nil {
		return nil, false
	}
	if t, _ := schema["type"].(string); t == "object" {
		return schema, false
	}
	if _, ok := schema["type"]; !ok {
		if _, ok := schema["properties"]; ok {
			return schema, false
		}
	}
	return map[string]any{
		"type":                 "object",
		"properties":           map[string]any{"value": schema},
		"required":             []any{"value"},
		"additionalProperties": false,
	}, true
}

// Keywords OpenAI strict mode rejects (moved into the description).
var strictUnsupported = map[string]bool{
	"allOf": true, "not": true, "if": true, "then": true, "else": true,
	"dependentRequired": true, "dependentSchemas": true, "default": true,
	"patternProperties": true, "unevaluatedProperties": true, "unevaluatedItems": true,
	"propertyNames": true, "minProperties": true, "maxProperties": true,
	"contains": true, "minContains": true, "maxContains": true, "uniqueItems": true,
	"minLength": true, "maxLength": true, "prefixItems": true, "examples": true,
	"contentEncoding": true, "contentMediaType": true,
}

// Keywords the Anthropic trimmed schema drops (moved into the description).
var anthropicUnsupported = map[string]bool{
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true,
	"multipleOf": true, "minLength": true, "maxLength": true, "pattern": true,
	"maxItems": true, "minProperties": true, "maxProperties": true, "uniqueItems": true,
	"default": true, "examples": true,
}

// Always dropped silently (they only name the document).
var metaKeywords = map[string]bool{"$schema": true, "$id": true, "$comment": true}

// StrictSchema is OpenAI's strict projection of schema: every property
// listed in required (optional ones made nullable), additionalProperties
// false on every object, oneOf turned into anyOf, unsupported keywords
// dropped into the description. strict is false when the schema cannot be
// expressed strictly (a free-form object or an empty schema somewhere); the
// projection is then still usable with strict: false. The input is not
// modified.
func StrictSchema(schema map[string]any) (out map[string]any, strict bool) {
	p := projector{strict: true, drop: strictUnsupported, openai: true}
	out = p.node(schema)
	return out, p.strict
}

// TrimmedSchema is the schema for Anthropic's forced "output" tool: numeric,
// length and pattern constraints dropped into the description (local
// validation still checks them), meta keywords removed. The input is not
// modified.
func TrimmedSchema(schema map[string]any) map[string]any {
	p := projector{drop: anthropicUnsupported}
	return p.node(schema)
}

type projector struct {
	strict bool
	openai bool
	drop   map[string]bool
}

func (p *projector) node(s map[string]any) map[string]any {
	if s == nil {
		p.strict = false
		return map[string]any{}
	}
	out := make(map[string]any, len(s)+1)
	var dropped []string
	for _, k := range slices.Sorted(maps.Keys(s)) {
		v := s[k]
		switch {
		case metaKeywords[k]:
			continue
		case p.drop[k]:
			b, _ := json.Marshal(v)
			dropped = append(dropped, fmt.Sprintf("%s: %s", k, b))
			continue
		}
		switch k {
		case "properties", "$defs", "definitions", "patternProperties":
			if m, ok := v.(map[string]any); ok {
				mm := make(map[string]any, len(m))
				for name, sub := range m {
					if sm, ok := sub.(map[string]any); ok {
						mm[name] = p.node(sm)
					} else {
						mm[name] = sub
					}
				}
				out[k] = mm
				continue
			}
		case "items", "additionalProperties", "contains", "not", "if", "then", "else":
			if sm, ok := v.(map[string]any); ok {
				out[k] = p.node(sm)
				continue
			}
		case "anyOf", "oneOf", "allOf", "prefixItems":
			if l, ok := v.([]any); ok {
				ll := make([]any, len(l))
				for i, sub := range l {
					if sm, ok := sub.(map[string]any); ok {
						ll[i] = p.node(sm)
					} else {
						ll[i] = sub
					}
				}
				if k == "oneOf" && p.openai {
					k = "anyOf"
				}
				out[k] = ll
				continue
			}
		}
		out[k] = v
	}
	if len(dropped) > 0 {
		desc, _ := out["description"].(string)
		note := "Constraints: " + strings.Join(dropped, "; ") + "."
		if desc != "" {
			desc += " " + note
		} else {
			desc = note
		}
		out["description"] = desc
	}
	if len(out) == 0 || (len(out) == 1 && out["description"] != nil) {
		p.strict = false // an empty schema accepts anything
	}
	if !p.openai {
		return out
	}
	if isObject(out) {
		p.closeObject(s, out)
	}
	return out
}

// closeObject makes the projected object out strict as OpenAI's
// structured outputs want it: every property required (those s does not
// require made nullable) and no additional properties. A free-form object
// or one that allowed additional properties makes the schema not strict.
func (p *projector) closeObject(s, out map[string]any) {
	props, _ := out["properties"].(map[string]any)
	if len(props) == 0 {
		p.strict = false // free-form object
		return
	}
	required := map[string]bool{}
	if r, ok := s["required"].([]any); ok {
		for _, n := range r {
			if ns, ok := n.(string); ok {
				required[ns] = true
			}
		}
	} else if r, ok := s["required"].([]string); ok {
		for _, n := range r {
			required[n] = true
		}
	}
	names := slices.Sorted(maps.Keys(props))
	req := make([]any, 0, len(names))
	for _, n := range names {
		req = append(req, n)
		if !required[n] {
			if sm, ok := props[n].(map[string]any); ok {
				props[n] = nullable(sm)
			}
		}
	}
	out["required"] = req
	if ap, ok := out["additionalProperties"]; ok && ap != false {
		p.strict = false
	}
	out["additionalProperties"] = false
}

func isObject(s map[string]any) bool {
	switch t := s["type"].(type) {
	case string:
		return t == "object"
	case []any:
		return slices.Contains(t, any("object"))
	}
	_, ok := s["properties"]
	return ok
}

// nullable makes s accept null too.
func nullable(s map[string]any) map[string]any {
	out := maps.Clone(s)
	switch t := s["type"].(type) {
	case string:
		if t == "null" {
			return out
		}
		out["type"] = []any{t, "null"}
	case []any:
		if !slices.Contains(t, any("null")) {
			out["type"] = append(slices.Clone(t), "null")
		}
	default:
		return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
	}
	if e, ok := out["enum"].([]any); ok && !slices.Contains(e, nil) {
		out["enum"] = append(slices.Clone(e), nil)
	}
	return out
}

// DropOptionalNulls maps an answer to a strict projection back onto the
// original schema: a null value of a property the original does not require
// and whose schema does not allow null is removed (optional → nullable was
// the projection's doing). It walks nested objects and array items; v is
// modified in place and returned.
func DropOptionalNulls(schema map[string]any, v any) any {
	if schema == nil {
		return v
	}
	switch x := v.(type) {
	case map[string]any:
		props, _ := schema["properties"].(map[string]any)
		if props == nil {
			return v
		}
		req := map[string]bool{}
		switch r := schema["required"].(type) {
		case []any:
			for _, n := range r {
				if ns, ok := n.(string); ok {
					req[ns] = true
				}
			}
		case []string:
			for _, n := range r {
				req[n] = true
			}
		}
		for k, val := range x {
			ps, _ := props[k].(map[string]any)
			if val == nil && !req[k] && !allowsNull(ps) {
				delete(x, k)
				continue
			}
			if ps != nil {
				x[k] = DropOptionalNulls(ps, val)
			}
		}
	case []any:
		if items, ok := schema["items"].(map[string]any); ok {
			for i := range x {
				x[i] = DropOptionalNulls(items, x[i])
			}
		}
	}
	return v
}

func allowsNull(s map[string]any) bool {
	if s == nil {
		return true
	}
	switch t := s["type"].(type) {
	case string:
		return t == "null"
	case []any:
		return slices.Contains(t, any("null"))
	case nil:
		if e, ok := s["enum"].([]any); ok {
			return slices.Contains(e, nil)
		}
		if _, ok := s["anyOf"]; ok {
			return true // be lenient: local validation decides
		}
		return len(s) == 0
	}
	return false
}
