package specs

// Diagnostic codes. They are stable: tools and tests match on them. The list
// is agreed in CODES.md; each code belongs to exactly one ErrorType.
const (
	// ir_parse_error: nothing else is checked after these.
	CodeEmpty             = "empty"
	CodeInvalidUTF8       = "invalid-utf8"
	CodeTooLarge          = "too-large"
	CodeYAMLTab           = "yaml-tab"
	CodeYAMLSyntax        = "yaml-syntax"
	CodeYAMLAliases       = "yaml-aliases"
	CodeTooDeep           = "too-deep"
	CodeMultipleDocuments = "multiple-documents"

	// ir_validation_error: the structure of the version's IR schema.
	CodeNotMapping       = "not-mapping"
	CodeMissingVersion   = "missing-version"
	CodeUnknownVersion   = "unknown-version"
	CodeVersionNotString = "version-not-string"
	CodeUnknownField     = "unknown-field"
	CodeNeedsVersion     = "needs-version"
	CodeMissingField     = "missing-field"
	CodeWrongType        = "wrong-type"
	CodeInvalidValue     = "invalid-value"
	CodeOutOfRange       = "out-of-range"
	CodeEmptyValue       = "empty-value"
	CodeInvalidName      = "invalid-name"
	CodeDuplicateKey     = "duplicate-key"
	// A duration (a gate's timeout, task_timeout, a budget's ms) longer
	// than MaxDuration: its deadline could not be represented.
	CodeDurationTooLong = "duration-too-long"
	// An empty guardrail pattern: the original's schema (minLength 1)
	// rejects it before any semantic check.
	CodeEmptyGuardrail = "empty-guardrail"
	// A construct of the original's newer releases (judge
	// steps, newer ensure builtins, the TypeScript rewrite's version 1
	// format) that this stratum does not implement: a version gap, not a
	// typo. The original accepts these specs, so the class is ours.
	CodeUnsupported = "unsupported"

	// ir_semantic_error: schema-valid, but references, routing or expressions are wrong.
	CodeDuplicateStepID    = "duplicate-step-id"
	CodeUndefinedFunction  = "undefined-function"
	CodeUndefinedContract  = "undefined-contract"
	CodeUndefinedFlow      = "undefined-flow"
	CodeUndefinedStep      = "undefined-step"
	CodeUndefinedInput     = "undefined-input"
	CodeBadRef             = "bad-ref"
	CodeDependencyCycle    = "dependency-cycle"
	CodeRecursiveFlow      = "recursive-flow"
	CodeStepMode           = "step-mode"
	CodeGateFunctionField  = "gate-function-field"
	CodeGateStepField      = "gate-step-field"
	CodeGateRoutingMissing = "gate-routing-missing"
	CodeGateReviseTarget   = "gate-revise-target"
	CodeNotAGate           = "not-a-gate"
	CodePolicyFallback     = "policy-fallback"
	// A flag/skip policy on an approver: human gate without policy_fallback.
	CodePolicyHuman        = "policy-human"
	CodeFunctionStepField  = "function-step-field"
	CodeFlowStepField      = "flow-step-field"
	CodeParallelField      = "parallel-field"
	CodeParallelRequires   = "parallel-requires"
	CodeOnFailUnreachable  = "on-fail-unreachable"
	CodeIterationField     = "iteration-field"
	CodeInvalidRegex       = "invalid-regex"
	CodeExprSyntax         = "expr-syntax"
	CodeExprForbidden      = "expr-forbidden"
	CodeUnknownResultField = "unknown-result-field"
	CodeUnknownType        = "unknown-type"
	CodeContractCycle      = "contract-cycle"
	// Contracts nested deeper than MaxContractDepth, or schemas that grow
	// past MaxContractNodes with contained contracts inlined.
	CodeContractDepth  = "contract-depth"
	CodeContractSize   = "contract-size"
	CodeInvalidSchema  = "invalid-schema"
	CodeWorkflowEntry  = "workflow-entry"
	CodeWorkflowInputs = "workflow-inputs"
	CodeCacheField     = "cache-field"
	CodeRunField       = "run-field"
	CodeOpaqueInline   = "opaque-inline"
	// A reasoning_template / task_reasoning_template without sections, or
	// with a section that is not a mapping or lacks id, label or description.
	CodeReasoningTemplate = "reasoning-template"
	// A pipeline step's stages that do not fit together: the fan-out
	// region's shape, a when/exit_when where it cannot apply, a stage
	// template naming {prev}, {prevs} or {source} where it is not bound.
	CodePipelineStage = "pipeline-stage"
	// A judge step's predicate the judge could never decide: an id used
	// twice, or a non-deterministic predicate under cheap stakes.
	CodeJudgePredicate = "judge-predicate"
)

// parseCodes are the ir_parse_error codes; validationCodes the
// ir_validation_error ones. Every other code is an ir_semantic_error.
var (
	parseCodes = map[string]bool{
		CodeEmpty: true, CodeInvalidUTF8: true, CodeTooLarge: true, CodeYAMLTab: true,
		CodeYAMLSyntax: true, CodeYAMLAliases: true, CodeTooDeep: true, CodeMultipleDocuments: true,
	}
	validationCodes = map[string]bool{
		CodeNotMapping: true, CodeMissingVersion: true, CodeUnknownVersion: true,
		CodeVersionNotString: true, CodeUnknownField: true, CodeNeedsVersion: true,
		CodeMissingField: true, CodeWrongType: true, CodeInvalidValue: true,
		CodeOutOfRange: true, CodeDurationTooLong: true, CodeEmptyValue: true, CodeInvalidName: true, CodeDuplicateKey: true,
		CodeEmptyGuardrail: true, CodeUnsupported: true,
	}
)

// ErrorTypeOf returns the original's error class of a diagnostic code.
func ErrorTypeOf(code string) ErrorType {
	switch {
	case parseCodes[code]:
		return ParseError
	case validationCodes[code]:
		return ValidationError
	default:
		return SemanticError
	}
}
