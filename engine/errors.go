package engine

import (
	"fmt"
	"sort"
	"strings"
	"unicode"
)

// Error types of the hand-built error envelopes (upstream-behavior §2.3) and
// ours.
const (
	ErrTypeExecution         = "execution_error"
	ErrTypeFlowNotFound      = "flow_not_found"
	ErrTypeGateStepRequires  = "gate_step_requires_gate_resolve"
	ErrTypeRetriesExhausted  = "retries_exhausted"
	ErrTypeInvalidOutcome    = "invalid_outcome"
	ErrTypeInvalidResolvedBy = "invalid_resolved_by"
	ErrTypeFlowComplete      = "flow_already_complete"
	ErrTypeWrongStep         = "wrong_step"
	ErrTypeNotAGateStep      = "not_a_gate_step"
	ErrTypeStepNotFound      = "step_not_found"
	ErrTypeMissingOnRevise   = "missing_on_revise"
	ErrTypeMaxRoundsExceeded = "max_rounds_exceeded"
	ErrTypeParallelComplete  = "flow_complete"
	ErrTypeStepMismatch      = "step_mismatch"
	ErrTypeWrongStepType     = "wrong_step_type"
	ErrTypeGateRequiresHuman = "gate_requires_human" // ours: approver human refuses the mcp channel
	ErrTypeStaleRound        = "stale_round"         // ours: a decision for another round of the gate
	ErrTypeFlowOwned         = "flow_owned"          // ours: a live runner lease owns the flow
	ErrTypeFlowNotRunning    = "flow_not_running"    // ours: the flow failed or ran out of budget
	ErrTypeInvalidInput      = "invalid_input"       // ours: plan inputs do not match the flow's input params
	ErrTypeInternal          = "internal_error"
)

// errorResponse builds the hand-built envelope {status:"error", error_type,
// message} plus extra keys (no `success` key, as the original's hand-built
// errors).
func errorResponse(errorType, message string, extra map[string]any) Response {
	r := Response{"status": "error", "error_type": errorType, "message": message}
	for k, v := range extra {
		r[k] = v
	}
	return r
}

// executionError builds the translated-exception envelope {status:"error",
// success:false, error_type:"execution_error", message}.
func executionError(message string) Response {
	return Response{"status": "error", "success": false, "error_type": ErrTypeExecution, "message": message}
}

// internalError is the original's translated unexpected exception
// {status:"error", success:false, error_type:"internal_error", message}; the
// message never carries details.
func internalError() Response {
	return Response{"status": "error", "success": false, "error_type": ErrTypeInternal, "message": "An unexpected error occurred."}
}

// ExecError is a runtime error of a transition that the original raised as
// MCPExecutionError ($-reference resolution, an unknown flow name, a cycle…).
// The service answers it with an execution_error envelope and writes nothing.
type ExecError struct {
	Message string
}

func (e *ExecError) Error() string { return e.Message }

func execErrorf(format string, args ...any) *ExecError {
	return &ExecError{Message: fmt.Sprintf(format, args...)}
}

// IsErrorResponse reports whether r is an error envelope.
func IsErrorResponse(r Response) bool {
	s, _ := r["status"].(string)
	return s == "error"
}

// pyStrList renders a list of strings the way Python's repr renders a list
// (['a', 'b']), for messages copied from the original.
func pyStrList(items []string) string {
	parts := make([]string, len(items))
	for i, s := range items {
		parts[i] = pyStr(s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// pyStr renders a string the way Python's repr() does (the original builds
// many messages with {x!r}): single quotes unless the text contains a single
// quote and no double quote; backslashes, the quote, \t \n \r and
// non-printable characters escaped.
func pyStr(s string) string {
	quote := '\''
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		quote = '"'
	}
	var b strings.Builder
	b.WriteRune(quote)
	for _, r := range s {
		switch {
		case r == quote || r == '\\':
			b.WriteRune('\\')
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r < 0x80 || unicode.IsPrint(r):
			b.WriteRune(r)
		case r <= 0xff:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	b.WriteRune(quote)
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
