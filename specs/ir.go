package specs

import "regexp"

// Pos is a 1-based line and column in the spec file.
type Pos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
}

// Supported IR versions.
const (
	Version01 = "0.1"
	Version02 = "0.2"
	Version03 = "0.3"
	// LatestVersion is what suggestions recommend.
	LatestVersion = Version03
)

// Spec is a validated, normalised spec. All maps are keyed by name; the *Names
// slices keep declaration order. A Spec is read-only once Parse returned it.
type Spec struct {
	File    string // path as given to Parse ("" for inline text)
	Version string // "0.1" | "0.2" | "0.3"
	Source  []byte // the exact text that was parsed (persisted as raw_spec)

	Contracts     map[string]*Contract
	ContractNames []string
	Functions     map[string]*Function
	FunctionNames []string
	Flows         map[string]*Flow
	FlowNames     []string
	Workflow      *Workflow // nil when the spec has no workflow block
}

// Contract is a named output schema.
type Contract struct {
	Name   string
	Fields []*Field // declaration order
	// Schema is the compiled JSON Schema (draft 2020-12) of the contract, with
	// nested contracts inlined. Treat as read-only.
	Schema map[string]any
	// Hash is the first 12 hex digits of sha256 over the canonical JSON of
	// Schema (sorted keys, no whitespace): seed 000 §1.4.
	Hash string
	Pos  Pos
}

// Field returns the named field, or nil.
func (c *Contract) Field(name string) *Field {
	for _, f := range c.Fields {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// FieldTypes is the {field: type-string} map the original puts in a dispatch's
// output_fields.
func (c *Contract) FieldTypes() map[string]string {
	out := make(map[string]string, len(c.Fields))
	for _, f := range c.Fields {
		out[f.Name] = f.Type
	}
	return out
}

// Field is one field of a contract.
type Field struct {
	Name string
	// Type as written: string, number, integer, boolean, array, object, null,
	// or the name of another contract (nesting). Empty when the field is given
	// only by JSON-Schema keywords (e.g. enum).
	Type     string
	Values   []any // the original's `values` (an enum)
	Optional bool  // `optional: true` or `required: false`: not in the contract's required list
	Opaque   bool  // `opaque: true`: never interpolated into prompt text
	// Keywords are the JSON-Schema keywords written on the field (enum,
	// minimum, maximum, minLength, maxLength, pattern, items, format,
	// minItems, maxItems, description, …), as decoded from YAML.
	Keywords map[string]any
	// Schema is the field's compiled JSON Schema. Treat as read-only.
	Schema map[string]any
	Pos    Pos
}

// Mode is a function's execution mode.
type Mode string

const (
	ModeInfer   Mode = "infer"
	ModeCompute Mode = "compute"
	ModeGate    Mode = "gate"
)

// Param is a declared input parameter of a function, a flow or a workflow.
type Param struct {
	Name string
	Type string // as written; may be empty
	// Schema is the parameter's JSON Schema as written ({type: string, …}),
	// without the stratum-only keys (opaque, required, default).
	Schema     map[string]any
	Opaque     bool // `opaque: true`: kept out of instruction text (seed 000 §4.2)
	Required   bool // workflow inputs: `required: true`
	Default    any  // workflow inputs: `default`
	HasDefault bool
	Pos        Pos
}

// Budget is a time/cost/token envelope. Zero values mean "unbounded" for MS
// and Tokens; USD is a pointer because 0 is a valid limit.
type Budget struct {
	MS                 int64
	USD                *float64
	Tokens             int64 // `tokens` or the original's later `max_tokens`
	MaxAgentDispatches int   // the original's later run-budget field
}

// Guardrail is a compiled guardrail pattern (case-insensitive, multiline, as the
// original compiles them).
type Guardrail struct {
	Pattern string
	Re      *regexp.Regexp
}

// Command is the `run:` extension (0.2+): what a compute function or an
// inline step executes in-process. Exactly one of Shell and Argv is set.
type Command struct {
	Shell string   // run by `sh -c`
	Argv  []string // executed directly
	Dir   string   // working directory; "" = the spec's directory
	Env   map[string]string
	Pos   Pos
}

// Function is a reusable definition referenced by function steps.
type Function struct {
	Name   string
	Mode   Mode
	Intent string
	Input  []*Param // declaration order
	Output string   // contract name; "" for gates
	Ensure []*Expr
	Budget *Budget
	// Retries is the total number of attempts (not extra attempts), default 3.
	Retries    int
	RetriesSet bool // written explicitly in the spec
	Model      string
	Timeout    int // seconds; meaningful on gates (0 = none)
	Guardrails []*Guardrail
	Cache      bool

	// Extensions (0.2+), gates only.
	OnTimeout string // "kill" (default) | "approve" | "revise"
	Approver  string // "any" (default) | "human"
	// Extension (0.2+), compute only: the command to execute in-process.
	Run *Command

	Pos Pos
}

// Workflow is the `workflow:` block (0.2+).
type Workflow struct {
	Name        string
	Description string
	Input       []*Param
	EntryFlow   string // the flow the workflow runs
	Pos         Pos
}

// Flow is a DAG of steps.
type Flow struct {
	Name      string
	Input     []*Param // declaration order
	Output    string   // contract name, may be ""
	Budget    *Budget
	MaxRounds int // 0 = unlimited revises
	Steps     []*Step
	// Order is the execution order: indexes into Steps, computed with Kahn's
	// algorithm with a FIFO ready-queue over depends_on plus implicit edges from
	// `$.steps.<id>` input references (upstream-behavior §2.4). skip_if
	// references are not edges.
	Order []int
	Pos   Pos
}

// Step returns the step with that id, or nil.
func (f *Flow) Step(id string) *Step {
	for _, s := range f.Steps {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// OrderedSteps returns the steps in execution order.
func (f *Flow) OrderedSteps() []*Step {
	out := make([]*Step, len(f.Order))
	for i, idx := range f.Order {
		out[i] = f.Steps[idx]
	}
	return out
}

// StepKind is how a step executes.
type StepKind string

const (
	KindFunction         StepKind = "function"          // `function:` (infer, compute, or gate)
	KindInline           StepKind = "inline"            // `intent:` without a function
	KindFlow             StepKind = "flow"              // `flow:` sub-flow
	KindDecompose        StepKind = "decompose"         // v0.3 `type: decompose`
	KindParallelDispatch StepKind = "parallel_dispatch" // v0.3 `type: parallel_dispatch`
	KindPipeline         StepKind = "pipeline"          // v0.3 `type: pipeline`: items through stages
)

// Input is one entry of a step's `inputs` map: a literal or a $-reference.
type Input struct {
	Name  string
	Value string
	Pos   Pos
}

// Step is one step of a flow. The execution fields (Ensure, Retries,
// Guardrails, OutputContract, Model, Budget) are the *effective* ones: for
// function steps they come from the function, for other steps from the step,
// with the per-kind retry defaults applied (function 3 unless the function says
// otherwise, inline 1, flow 1, judge 1, decompose and parallel_dispatch 2).
type Step struct {
	ID   string
	Kind StepKind
	Type string // `type:` as written (v0.3), may be ""

	Function string    // KindFunction: function name
	Fn       *Function // KindFunction: the function
	Intent   string    // inline/decompose: the step intent; function: the function intent
	Flow     string    // KindFlow: the child flow name
	Agent    string

	Inputs    []Input // declaration order
	DependsOn []string
	// OutputSchema is the step's `output_schema` as written (nil if none) and
	// Schema its compiled validator. Stratum enforces it on every step kind.
	OutputSchema map[string]any
	Schema       *Schema

	// Gate routing (function steps whose function has mode gate). "" = null.
	OnApprove string
	OnRevise  string
	OnKill    string
	Policy    string // "" (= gate) | "gate" | "flag" | "skip"
	// PolicyFallback is applied by the in-process runner when Policy cannot be
	// applied.
	PolicyFallback string

	// Non-gate routing.
	OnFail string
	Next   string

	SkipIf     *Expr
	SkipReason string

	Ensure         []*Expr
	Retries        int
	OutputContract string
	Model          string
	Budget         *Budget
	Guardrails     []*Guardrail

	MaxIterations int
	ExitCriterion *Expr
	ScoreExpr     *Expr
	Accumulate    *Expr
	AccumulateKey *Expr

	Cache bool
	// ReasoningTemplate is the reasoning certificate ({sections: [{id, label,
	// description}], require_citations}) with the original's defaults
	// applied (see cert.go); the engine checks it. nil when absent.
	ReasoningTemplate any

	// v0.3 parallel fields.
	Source                string
	MaxConcurrent         int    // default 3
	Isolation             string // default "worktree"
	Require               string // "all" (default) | "any" | a positive integer as text
	Merge                 string // default "sequential_apply"
	IntentTemplate        string
	TaskReasoningTemplate any // like ReasoningTemplate, per task
	TaskTimeout           int
	CaptureDiff           bool
	DeferAdvance          bool
	PreMergeVerify        any
	// Stages are a pipeline step's stages, in order (nil on other kinds).
	Stages []*Stage

	// Extension (0.2+): command for an inline step to execute in-process.
	Run *Command

	// Judge is a judge step's `judge:` block (KindJudge), nil otherwise.
	Judge *Judge

	Pos Pos
}

// IsGate reports whether the step is a gate (a function step whose function
// has mode gate).
func (s *Step) IsGate() bool { return s.Fn != nil && s.Fn.Mode == ModeGate }

// StepMode is the dispatch's step_mode string: "function", "inline", "flow",
// "decompose", "parallel_dispatch" or "judge" (a pipeline step runs as a
// parallel_dispatch, as in the original).
func (s *Step) StepMode() string {
	if s.Kind == KindPipeline {
		return string(KindParallelDispatch)
	}
	return string(s.Kind)
}

// FansOut reports whether the step runs a task graph: a parallel_dispatch
// or a pipeline step.
func (s *Step) FansOut() bool { return s.Kind == KindParallelDispatch || s.Kind == KindPipeline }

// Stage is one stage of a pipeline step: every item of the step's source
// runs through the stages in order, each item on its own (no stage waits
// for another item). The zero values mean "the step's".
type Stage struct {
	Index          int
	IntentTemplate string // rendered with {item}, {prev}, {prev_raw}, … (see REFERENCE.md)
	Agent          string // "" = the step's agent
	// TaskReasoningTemplate overrides the step's task_reasoning_template
	// for this stage's tasks (defaults applied as for the step's).
	TaskReasoningTemplate any
	TaskTimeout           int   // seconds; 0 = the step's task_timeout
	When                  *Expr // run the stage only when true (item, prev, prev_raw)
	ExitWhen              *Expr // after the stage completes: end the item's chain when true (item, result, result_raw)
	Fanout                *StageFanout
	Join                  bool // reduces the lanes of the fan-out before it ({prevs})
	Pos                   Pos
}

// StageFanout is a stage's `fanout`: its result is a list, and the stages
// up to the join run once per element (a lane), at most Max lanes.
type StageFanout struct {
	Max     int
	Require string // lanes that must complete for the join to run: "all" (default) | "any" | N
}

// StageRole is stage i's place in its step's fan-out region: "plain" outside
// one, "split" (the fanout stage), "lane" (between split and join) or
// "join".
func (s *Step) StageRole(i int) string {
	split, join := -1, -1
	for j, st := range s.Stages {
		if st.Fanout != nil && split < 0 {
			split = j
		}
		if st.Join && join < 0 {
			join = j
		}
	}
	switch {
	case split < 0 || join < 0:
		return "plain"
	case i == split:
		return "split"
	case i == join:
		return "join"
	case i > split && i < join:
		return "lane"
	}
	return "plain"
}
