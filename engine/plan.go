package engine

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs"
	"github.com/stratum-go/stratum/specs/py"
)

// PlanOptions are the optional parts of a plan.
type PlanOptions struct {
	// SpecFile is where the spec came from, when known.
	SpecFile string
	// Driver is DriverAgent (default) or DriverRunner.
	Driver string
	// Owner, when set, is the runner lease the new flow starts with.
	Owner *state.Lease
}

// planFlow is stratum_plan: it validates the inputs against the flow's input
// params, creates the flow state (flow id from env.NewID, raw_spec =
// env.Spec.Source) and computes the first dispatch. env.Spec must be set;
// env.Flow is ignored (the flow is looked up by name).
//
// A nil state with a Result.Err means the plan was refused (invalid
// inputs); an execution_error *Error means an unknown flow or a dispatch
// error.
func planFlow(env transitionEnv, flowName string, inputs map[string]any, opt PlanOptions) (*state.FlowState, transitionResult, error) {
	if env.Spec == nil {
		return nil, transitionResult{}, execErrorf("no spec")
	}
	flow := env.Spec.Flows[flowName]
	if flow == nil {
		return nil, transitionResult{}, execErrorf("Flow '%s' not found in spec", flowName)
	}
	if len(flow.Order) != len(flow.Steps) {
		in := map[int]bool{}
		for _, i := range flow.Order {
			in[i] = true
		}
		var ids []string
		for i, s := range flow.Steps {
			if !in[i] {
				ids = append(ids, s.ID)
			}
		}
		return nil, transitionResult{}, execErrorf("Cycle detected in step dependencies: %s", py.ReprStrings(ids))
	}
	resolved, problems := validateInputs(env.Spec, flow, inputs)
	if len(problems) > 0 {
		e := refusal(ErrTypeInvalidInput, "Invalid flow inputs: %s", strings.Join(problems, "; "))
		e.Problems = problems
		return nil, refused(e), nil
	}
	if env.NewID == nil {
		return nil, transitionResult{}, execErrorf("no flow id generator")
	}
	env.Flow = flow
	st := newFlowState(env.NewID(), flowName, string(env.Spec.Source), resolved, env.Now)
	st.SpecFile = opt.SpecFile
	st.Driver = orStr(opt.Driver, state.DriverAgent)
	if opt.Owner != nil {
		l := *opt.Owner
		st.Owner = &l
	}
	res := transitionResult{Events: []Event{event(st, env, "", FlowCreated{
		FlowName: flowName, Driver: st.Driver, SpecFile: st.SpecFile,
	})}}
	nr, err := currentDispatch(st, env)
	if err != nil {
		return nil, transitionResult{}, err
	}
	return st, mergeResults(res, nr), nil
}

// validateInputs checks the given inputs against the declared params: the
// flow's input params (types), and, when the flow is the workflow's entry
// flow, the workflow's input params (types, required, default applied).
// Undeclared inputs are accepted, as the original. It returns the inputs with
// defaults applied and the problems found, sorted.
func validateInputs(spec *specs.Spec, flow *specs.Flow, inputs map[string]any) (map[string]any, []string) {
	out := make(map[string]any, len(inputs))
	for k, v := range inputs {
		out[k] = v
	}
	var problems []string
	if spec.Workflow != nil && spec.Workflow.EntryFlow == flow.Name {
		for _, p := range spec.Workflow.Input {
			if _, ok := out[p.Name]; ok {
				continue
			}
			switch {
			case p.HasDefault:
				out[p.Name] = p.Default
			case p.Required:
				problems = append(problems, fmt.Sprintf("missing required input '%s'", p.Name))
			}
		}
		for _, p := range spec.Workflow.Input {
			if msg := checkParamType(p, out); msg != "" {
				problems = append(problems, msg)
			}
		}
	}
	for _, p := range flow.Input {
		if msg := checkParamType(p, out); msg != "" {
			problems = append(problems, msg)
		}
	}
	problems = append(problems, missingInputs(flow, out)...)
	sort.Strings(problems)
	problems = compactStrings(problems)
	return out, problems
}

// missingInputs names the flow inputs that a step reads ($.input.NAME in
// its inputs or source) and that were not given: refused before the flow
// starts (invalid_input) rather than failing the step that reads them.
func missingInputs(flow *specs.Flow, inputs map[string]any) []string {
	var out []string
	seen := map[string]bool{}
	for _, st := range flow.Steps {
		refs := []string{st.Source}
		for _, in := range st.Inputs {
			refs = append(refs, in.Value)
		}
		for _, r := range refs {
			rest, ok := strings.CutPrefix(r, "$.input.")
			if !ok {
				continue
			}
			name, _, _ := strings.Cut(rest, ".")
			if _, given := inputs[name]; given || name == "" || seen[name] {
				continue
			}
			seen[name] = true
			out = append(out, fmt.Sprintf("missing input '%s' (step '%s' reads $.input.%s)", name, st.ID, name))
		}
	}
	return out
}

func compactStrings(s []string) []string {
	var out []string
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// checkParamType checks a present input against a param's JSON type; ""
// when it matches, the param has no (known) type, or the input is absent.
func checkParamType(p *specs.Param, inputs map[string]any) string {
	v, ok := inputs[p.Name]
	if !ok || p.Type == "" {
		return ""
	}
	got := jsonKind(v)
	want := p.Type
	match := false
	switch want {
	case "string", "boolean", "array", "object", "null":
		match = got == want
	case "number":
		match = got == "number" || got == "integer"
	case "integer":
		match = got == "integer"
	default:
		return "" // a type we do not check (e.g. a contract name)
	}
	if match {
		return ""
	}
	return fmt.Sprintf("input '%s' must be %s, got %s", p.Name, want, got)
}

// jsonKind names the JSON type of a decoded value ("integer" for integral
// numbers).
func jsonKind(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return "integer"
	case float32:
		if float64(x) == math.Trunc(float64(x)) {
			return "integer"
		}
		return "number"
	case float64:
		if x == math.Trunc(x) && !math.IsInf(x, 0) {
			return "integer"
		}
		return "number"
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// resumeFlow is stratum_resume: the current dispatch (skip_if and the policy
// loop applied; a pending gate's deadline is kept, never re-stamped), or the
// final payload of a finished flow: complete → the completion object,
// killed → {status:"killed", flow_id, trace, total_duration_ms}, failed /
// budget_exhausted → {status, flow_id}.
func resumeFlow(st *state.FlowState, env transitionEnv) (transitionResult, error) {
	ensureMaps(st)
	switch st.Status {
	case state.StatusFailed, state.StatusBudgetExhausted:
		return answer(&Stopped{Status: st.Status, FlowID: st.FlowID}), nil
	case state.StatusKilled:
		if pastEnd(st, env) {
			return answer(killedPayload(st, env)), nil
		}
	case state.StatusComplete:
		if pastEnd(st, env) {
			return answer(completionPayload(st, env, state.StatusComplete)), nil
		}
	}
	ensureMaps(st)
	before := st.Clone()
	res, err := currentDispatch(st, env)
	if err != nil {
		return transitionResult{}, err
	}
	if len(res.Put) == 0 && len(res.Delete) == 0 && sameState(before, st) {
		res.Unchanged = true
	}
	return res, nil
}
