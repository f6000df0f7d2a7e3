package run

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/stratum-go/stratum/engine/internal/jsonlimit"
	"github.com/stratum-go/stratum/specs"
)

// ParseInput parses one flow input written NAME=VALUE (a --input flag, a
// field typed in the TUI): VALUE is taken as JSON when it is valid JSON
// (3, true, ["a"], {"k": 1}, "quoted text"), else as a plain string.
func ParseInput(field string) (string, any, error) {
	name, val, ok := strings.Cut(field, "=")
	if !ok || strings.TrimSpace(name) == "" {
		return "", nil, fmt.Errorf("input %q: want NAME=VALUE", field)
	}
	var v any
	if err := jsonlimit.Decode([]byte(val), &v); err != nil {
		var limit *jsonlimit.Error
		if errors.As(err, &limit) {
			return "", nil, fmt.Errorf("input %s: %w", name, err)
		}
		v = val // not JSON: a plain string
	}
	return name, v, nil
}

// ParseInputs builds a flow's inputs from a JSON file (--inputs FILE; ""
// for none), then NAME=VALUE fields, which win over the file's values.
func ParseInputs(fields []string, file string) (map[string]any, error) {
	inputs := map[string]any{}
	if file != "" {
		b, err := jsonlimit.ReadFile(file)
		if err != nil {
			return nil, err
		}
		if err := jsonlimit.Decode(b, &inputs); err != nil || inputs == nil {
			if err == nil {
				err = fmt.Errorf("null")
			}
			return nil, fmt.Errorf("%s: not a JSON object: %v", file, err)
		}
	}
	for _, f := range fields {
		name, v, err := ParseInput(f)
		if err != nil {
			return nil, err
		}
		inputs[name] = v
	}
	return inputs, nil
}

// TextInputs returns the NAME=VALUE fields as typed (the last one of a
// name wins, as in ParseInputs), for CoerceInputs; nil for no fields.
func TextInputs(fields []string) map[string]string {
	if len(fields) == 0 {
		return nil
	}
	out := map[string]string{}
	for _, f := range fields {
		if name, val, ok := strings.Cut(f, "="); ok && strings.TrimSpace(name) != "" {
			out[name] = val
		}
	}
	return out
}

// CoerceInputs reads command-line inputs as the types the spec declares
// for them: ParseInput takes a value as JSON when it is valid JSON, so
// `--input version=7` gives the number 7; when the flow (or the workflow
// entering it) declares that input a string, the text as typed is used
// instead. Other declared types keep the JSON reading (a text that is not
// one is then refused by the engine's input check). text holds the typed
// fields (TextInputs); inputs is changed in place and returned.
func CoerceInputs(sp *specs.Spec, flowName string, inputs map[string]any, text map[string]string) map[string]any {
	if sp == nil || len(text) == 0 {
		return inputs
	}
	var params []*specs.Param
	if f := sp.Flows[flowName]; f != nil {
		params = append(params, f.Input...)
	}
	if sp.Workflow != nil && sp.Workflow.EntryFlow == flowName {
		params = append(params, sp.Workflow.Input...)
	}
	for _, p := range params {
		raw, typed := text[p.Name]
		if !typed || p.Type != "string" {
			continue
		}
		if _, isStr := inputs[p.Name].(string); !isStr {
			inputs[p.Name] = raw
		}
	}
	return inputs
}

// ParseResult reads a step's result as `stratum step-done` takes it: the
// JSON text of --result, or the JSON file --result-file names ("-" for
// stdin); exactly one of the two. The result must be JSON within the
// engine's limits (jsonlimit.Decode).
func ParseResult(result, resultFile string, stdin io.Reader) (any, error) {
	var raw []byte
	var err error
	switch {
	case result != "" && resultFile != "":
		return nil, errors.New("give --result or --result-file, not both")
	case result != "":
		raw = []byte(result)
	case resultFile == "-":
		if raw, err = jsonlimit.Read(stdin); err != nil {
			return nil, fmt.Errorf("reading stdin: %v", err)
		}
	case resultFile != "":
		if raw, err = jsonlimit.ReadFile(resultFile); err != nil {
			return nil, err
		}
	default:
		return nil, errors.New("step-done needs --result JSON or --result-file FILE")
	}
	var v any
	if err := jsonlimit.Decode(raw, &v); err != nil {
		var limit *jsonlimit.Error
		if errors.As(err, &limit) {
			return nil, fmt.Errorf("the result is refused: %v", err)
		}
		return nil, fmt.Errorf("the result is not valid JSON: %v", err)
	}
	return v, nil
}
