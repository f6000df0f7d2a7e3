package engine

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs"
	"github.com/stratum-go/stratum/specs/py"
)

// stepDone is stratum_step_done (upstream-behavior §2.6): it checks the
// result of the current step (output_schema → guardrails → ensure), retries
// with the violations, routes on_fail on exhaustion, or stores the output and
// advances (next, or linearly) to the next dispatch.
func stepDone(st *state.FlowState, env transitionEnv, stepID string, result any) (transitionResult, error) {
	ensureMaps(st)
	step, e := reportable(st, env, stepID, stepDoneReport)
	if e != nil {
		return refused(e), nil
	}
	childID := ""
	var pre transitionResult
	if step.Kind == specs.KindFlow {
		childID = snapshotChildAudit(st, env, step.ID, &pre)
		result = unwrapChildCompletion(result)
	}
	res, err := processResult(st, env, step, result, childID, nil, nil)
	if err != nil {
		return transitionResult{}, err
	}
	return mergeResults(pre, res), nil
}

// unwrapChildCompletion turns a child flow's completion object {status,
// output, …} into its output; anything else is accepted as the raw output
// (0.2.69 behaviour).
func unwrapChildCompletion(result any) any {
	m, ok := result.(map[string]any)
	if !ok {
		return result
	}
	_, hasStatus := m["status"]
	out, hasOutput := m["output"]
	if hasStatus && hasOutput {
		return out
	}
	return result
}

// checkResult runs the checks in the original's order, the first failing
// stage short-circuiting the later ones: output_schema (every step kind,
// README, "Deliberate differences"), guardrails over the canonical JSON of the result, the
// reasoning certificate (claude steps with reasoning_template), ensure.
func checkResult(env transitionEnv, step *specs.Step, result any) (CheckFailure, []string) {
	if step.Schema != nil {
		if msgs := schemaViolations(step.Schema, result); len(msgs) > 0 {
			vs := make([]string, len(msgs))
			for i, m := range msgs {
				vs[i] = "output_schema violation: " + m
			}
			return CheckSchema, vs
		}
	}
	if len(step.Guardrails) > 0 {
		text, err := guardrailText(result)
		if err != nil {
			return CheckGuardrail, []string{"result is not JSON-encodable: " + err.Error()}
		}
		var vs []string
		for _, g := range step.Guardrails {
			if g != nil && g.Re != nil && g.Re.Match(text) {
				vs = append(vs, "guardrail matched: "+py.ReprString(g.Pattern))
			}
		}
		if len(vs) > 0 {
			return CheckGuardrail, vs
		}
	}
	if cv := certificateViolations(step, result); len(cv) > 0 {
		return CheckEnsure, cv
	}
	var vs []string
	for _, e := range step.Ensure {
		if e == nil {
			continue
		}
		ok, err := evalBool(env.context(), e, specs.EvalEnv{Result: result, Root: env.Root})
		switch {
		case err != nil && exprViolations(err) != nil:
			vs = append(vs, exprViolations(err)...)
		case err != nil:
			vs = append(vs, fmt.Sprintf("Ensure expression %s raised: %s", py.ReprString(e.Source), err))
		case !ok:
			vs = append(vs, fmt.Sprintf("ensure '%s' failed", e.Source))
		}
	}
	if len(vs) > 0 {
		return CheckEnsure, vs
	}
	return "", nil
}

// processResult is the shared tail of step_done and parallel_done. extra,
// when set, adds violations after the checks passed (parallel require/merge);
// they count as ensure_failed. notes are appended to the violations of any
// failure (parallel per-task certificate violations).
func processResult(st *state.FlowState, env transitionEnv, step *specs.Step, result any, childID string, extra func(any) []string, notes []string) (transitionResult, error) {
	if best, ok := iterationBestResult(st, step.ID); ok {
		result = best
	}
	st.Attempts[step.ID]++
	attempts := st.Attempts[step.ID]
	status, violations := checkResult(env, step, result)
	if status == "" && extra != nil {
		if vs := extra(result); len(vs) > 0 {
			status, violations = CheckEnsure, vs
		}
	}
	if status != "" {
		violations = append(violations, notes...)
		return failAttempt(st, env, step, result, childID, attempts, status, violations)
	}

	var res transitionResult
	if e := cacheEntryFor(st, env, step, result); e != nil {
		res.Cache = append(res.Cache, *e)
	}
	out := mergeAccumulated(st, step, result)
	st.StepOutputs[step.ID] = out
	st.Records = append(st.Records, stepRecord(st, env, step, attempts, childID))
	delete(st.DispatchedAt, step.ID)
	consumeIterationOutcome(st, step.ID)
	res.Events = append(res.Events, event(st, env, step.ID, StepDone{Attempts: attempts}))
	switch {
	case killedMode(st):
		st.CurrentIdx = totalSteps(env)
	case step.Next != "" && stepIndex(env, step.Next) >= 0:
		i := stepIndex(env, step.Next)
		clearFrom(st, env, i, "")
		st.CurrentIdx = i
	default:
		advanceLinear(st, env)
	}
	nr, err := currentDispatch(st, env)
	if err != nil {
		return transitionResult{}, err
	}
	return mergeResults(res, nr), nil
}

// failAttempt handles a failed check: retry (same dispatch, failure status,
// violations), or on exhaustion on_fail routing or retries_exhausted.
func failAttempt(st *state.FlowState, env transitionEnv, step *specs.Step, result any, childID string, attempts int, status CheckFailure, violations []string) (transitionResult, error) {
	var res transitionResult
	exhausted := attempts >= maxRetries(step)
	res.Events = append(res.Events, event(st, env, step.ID, StepFailed{
		Status: string(status), Violations: violations, Attempt: attempts, Exhausted: exhausted,
	}))
	if !exhausted {
		delete(st.DispatchedAt, step.ID)
		clearStepIteration(st, step.ID)
		d, err := dispatchStep(st, env, step, &res)
		if err != nil {
			return transitionResult{}, err
		}
		if n := NotesOf(d); n != nil {
			n.Failure, n.Violations = status, violations
		}
		res.Outcome = d
		return res, nil
	}
	st.Records = append(st.Records, stepRecord(st, env, step, attempts, childID))
	delete(st.DispatchedAt, step.ID)
	clearStepIteration(st, step.ID)
	if step.OnFail != "" && stepIndex(env, step.OnFail) >= 0 {
		st.StepOutputs[step.ID] = result
		i := stepIndex(env, step.OnFail)
		clearFrom(st, env, i, step.ID)
		st.CurrentIdx = i
		nr, err := currentDispatch(st, env)
		if err != nil {
			return transitionResult{}, err
		}
		res = mergeResults(res, nr)
		if n := NotesOf(res.Outcome); n != nil {
			n.RoutedFrom, n.Violations = step.ID, violations
		}
		return res, nil
	}
	st.Status = state.StatusFailed
	st.Gate = nil
	st.ActiveChildFlowID = nil
	res.Events = append(res.Events, event(st, env, step.ID, FlowFinished{Status: string(state.StatusFailed)}))
	e := refusal(ErrTypeRetriesExhausted, "Step '%s' exhausted all retries", step.ID)
	e.FlowID, e.StepID, e.StepMode, e.Agent, e.Violations = st.FlowID, step.ID, step.StepMode(), step.Agent, violations
	res.Err = e
	return res, nil
}

// stepRecord builds the StepRecord of a finished step (success or exhaustion).
func stepRecord(st *state.FlowState, env transitionEnv, step *specs.Step, attempts int, childID string) state.Record {
	rec := newRecord(st, env, state.RecordStep, step.ID)
	rec.FunctionName = step.Function
	rec.Attempts = attempts
	rec.DurationMS = durationMS(st.DispatchedAt[step.ID], env.Now)
	if step.Agent != "" {
		rec.Agent = strPtr(step.Agent)
	}
	rec.StepMode = step.StepMode()
	if childID != "" {
		rec.ChildFlowID = strPtr(childID)
	}
	return rec
}

// mergeResults appends b's events, puts and deletes to a's, and takes b's
// answer.
func mergeResults(a, b transitionResult) transitionResult {
	a.Events = append(a.Events, b.Events...)
	a.Put = append(a.Put, b.Put...)
	a.Delete = append(a.Delete, b.Delete...)
	a.Cache = append(a.Cache, b.Cache...)
	a.Outcome, a.Err = b.Outcome, b.Err
	return a
}

// certTemplate is a step's reasoning_template (STRAT-CERT): the sections the
// agent's artifact must contain and whether the conclusion must cite
// premises.
type certTemplate struct {
	sections         []certSection
	requireCitations bool
}

type certSection struct{ label, description string }

// stepCertTemplate returns the step's reasoning template when it applies: the
// original checks (and injects) it only for claude-agent steps (agent unset
// or "claude"; a "claude:<profile>" agent too).
func stepCertTemplate(step *specs.Step) (certTemplate, bool) {
	if step == nil || step.ReasoningTemplate == nil {
		return certTemplate{}, false
	}
	if a := step.Agent; a != "" && a != "claude" && !strings.HasPrefix(a, "claude:") {
		return certTemplate{}, false
	}
	return parseCertTemplate(step.ReasoningTemplate)
}

// parseCertTemplate reads {sections: [{label, description}], require_citations}.
func parseCertTemplate(v any) (certTemplate, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return certTemplate{}, false
	}
	var t certTemplate
	t.requireCitations, _ = m["require_citations"].(bool)
	list, _ := m["sections"].([]any)
	for _, e := range list {
		sm, ok := e.(map[string]any)
		if !ok {
			continue
		}
		label, _ := sm["label"].(string)
		desc, _ := sm["description"].(string)
		t.sections = append(t.sections, certSection{label: label, description: desc})
	}
	return t, true
}

var premiseCitation = regexp.MustCompile(`\[P\d+\]`)

// certificateViolations validates a result's reasoning certificate (the
// original's validate_certificate): every section heading "## <label>" must
// appear in result.artifact (or, without one, result.reasoning); with
// require_citations, the conclusion (the last section onward) must cite a
// premise [P<n>].
func certificateViolations(step *specs.Step, result any) []string {
	t, ok := stepCertTemplate(step)
	if !ok {
		return nil
	}
	return t.violations(result)
}

func (t certTemplate) violations(result any) []string {
	artifact := ""
	if m, ok := result.(map[string]any); ok {
		artifact, _ = m["artifact"].(string)
		if artifact == "" {
			artifact, _ = m["reasoning"].(string)
		}
	}
	var vs []string
	for _, s := range t.sections {
		if !strings.Contains(artifact, "## "+s.label) {
			vs = append(vs, "certificate missing section: "+s.label)
		}
	}
	if t.requireCitations && len(vs) == 0 && len(t.sections) > 0 {
		if i := strings.Index(artifact, "## "+t.sections[len(t.sections)-1].label); i >= 0 {
			if !premiseCitation.MatchString(artifact[i:]) {
				vs = append(vs, "certificate violation: conclusion contains no premise citations [P<n>]")
			}
		}
	}
	return vs
}

// inject appends the structured-output block of a reasoning
// template to an intent (the original's inject_cert_instructions).
func (t certTemplate) inject(intent string) string {
	lines := []string{intent, "", "---", "", "You MUST structure your response with these sections:", ""}
	for i, s := range t.sections {
		lines = append(lines, "## "+s.label, s.description)
		if i == 0 && t.requireCitations {
			lines = append(lines, "Format each fact as: [P1] <fact, citing file:line>, [P2] ..., etc.")
		}
		if i > 0 && t.requireCitations {
			lines = append(lines, "Reference premises by their [P<n>] ID.")
		}
		lines = append(lines, "")
	}
	return strings.Join(lines, "\n")
}

// guardrailText is the text guardrails scan: the result as the original's
// json.dumps(result, sort_keys=True) renders it — keys sorted, non-ASCII
// escaped, and Python's default separators ", " and ": " (patterns may
// rely on the spaces).
func guardrailText(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := writePyJSON(&b, v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func writePyJSON(b *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case map[string]any:
		keys := sortedKeys(x)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			kb, err := canonicalJSON(k)
			if err != nil {
				return err
			}
			b.Write(kb)
			b.WriteString(": ")
			if err := writePyJSON(b, x[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
		return nil
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			if err := writePyJSON(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
		return nil
	}
	if f, ok := v.(float64); ok && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		// A JSON number decoded into float64: "5" was an int for the
		// original's json.loads, and json.dumps writes it back as 5.
		b.WriteString(strconv.FormatInt(int64(f), 10))
		return nil
	}
	c, err := canonicalJSON(v) // scalars (and anything else) as the canonical form
	if err != nil {
		return err
	}
	b.Write(c)
	return nil
}
