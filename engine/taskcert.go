package engine

import "github.com/stratum-go/stratum/specs"

// The reasoning certificate of a fan-out task stratum runs itself
// (stratum run, stratum_parallel_start), as the original's parallel
// executor treats it: a pipeline stage task is told the sections of its
// certificate (taskCert: the stage's task_reasoning_template whatever its
// agent, else the step's on claude stages) and is checked against it when
// it ends, so a task that misses a section fails there and its item's
// later stages never start on its result. A parallel_dispatch task is not
// told (its prompt is the template as rendered) and is checked against
// the step's task_reasoning_template whatever the agent. stratum_parallel_done
// checks every complete task again (checkTaskCertificates).

// TaskIntent is the prompt a fan-out task runs with: prompt (the task's
// rendered template) and, for a pipeline stage task with a certificate,
// the certificate's instruction block after it ("You MUST structure your
// response with these sections:" and a "## <label>" heading per section).
// A parallel_dispatch task's prompt is returned unchanged.
func TaskIntent(step *specs.Step, taskID, prompt string) string {
	if step.Kind != specs.KindPipeline {
		return prompt
	}
	if t, ok := parseCertTemplate(taskCert(step, taskID)); ok {
		return t.inject(prompt)
	}
	return prompt
}

// TaskCertificateViolations checks the result of fan-out task taskID
// against its certificate when the task ends ("certificate missing
// section: <label>", one per section missing from the result's artifact,
// or its reasoning); nil when the task has no certificate or passes it.
func TaskCertificateViolations(step *specs.Step, taskID string, result any) []string {
	tmpl := step.TaskReasoningTemplate
	if step.Kind == specs.KindPipeline {
		tmpl = taskCert(step, taskID)
	}
	t, ok := parseCertTemplate(tmpl)
	if !ok {
		return nil
	}
	if result == nil {
		result = map[string]any{}
	}
	return t.violations(result)
}
