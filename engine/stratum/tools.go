package stratum

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/stratum-go/stratum/engine/internal/contract"
	"github.com/stratum-go/stratum/engine/internal/llm"
	"github.com/stratum-go/stratum/review"
)

// A Tool is a Go function a model may call during a Call (Spec.Tools).
// Make one with NewTool.
type Tool interface {
	tool() *toolDef
}

// ToolOption configures a Tool.
type ToolOption func(*toolConfig)

type toolConfig struct {
	question string
	approver review.Approver
	approval bool
}

// RequireApproval makes each call of the tool a review first: the question,
// with the tool's name, its arguments and the conversation so far as
// artifacts, decided like any review (the TUI, `stratum gate`, a sink,
// Runtime.Resolve). Approved, the tool runs; rejected, the model gets the
// tool's error with the reviewer's rationale. approver "human" lets only a
// person decide, under the same rules as AwaitHuman's; "" or "any" lets
// anyone.
func RequireApproval(question string, approver review.Approver) ToolOption {
	return func(c *toolConfig) { c.approval, c.question, c.approver = true, question, approver }
}

// DefaultMaxToolRounds bounds the tool rounds of one attempt when
// Spec.MaxToolRounds is 0.
const DefaultMaxToolRounds = 8

// toolDef is a Tool: its description to the model, its argument check and
// its function.
type toolDef struct {
	name, description string
	schema            map[string]any
	args              *contract.Checker
	run               func(ctx context.Context, args any) (json.RawMessage, error)
	cfg               toolConfig
	err               error // a definition error, reported by NewInfer
}

func (t *toolDef) tool() *toolDef { return t }

var toolName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]{0,63}$`)

// NewTool makes a Tool of f: the model sees name, description and the JSON
// Schema of In (as SchemaFor, so In is a struct or a map: a tool's
// arguments are an object). Each call's arguments are checked against that
// schema before f runs; a misfit, an error f returns or a panic goes back
// to the model as the tool's error, never failing the Call. Out is sent
// back as JSON. A definition NewTool cannot accept (a name models refuse,
// "output", an In that is not an object, a nil f) is reported by NewInfer
// as a *CompileError.
func NewTool[In, Out any](name, description string, f func(context.Context, In) (Out, error), opts ...ToolOption) Tool {
	t := &toolDef{name: name, description: description}
	for _, o := range opts {
		if o != nil {
			o(&t.cfg)
		}
	}
	fail := func(format string, args ...any) Tool {
		t.err = fmt.Errorf("tool %q: "+format, append([]any{name}, args...)...)
		return t
	}
	switch {
	case !toolName.MatchString(name):
		return fail("a tool's name is 1–64 letters, digits, _ or -, starting with a letter or _")
	case name == llm.OutputTool:
		return fail("the name %q is the library's own (the answer's)", llm.OutputTool)
	case f == nil:
		return fail("no function")
	case t.cfg.approval && strings.TrimSpace(t.cfg.question) == "":
		return fail("RequireApproval needs a question")
	case t.cfg.approval && t.cfg.approver != "" && t.cfg.approver != "any" && t.cfg.approver != "human":
		return fail("approver must be \"any\" or \"human\", got %q", t.cfg.approver)
	}
	schema, err := SchemaFor[In]()
	if err != nil {
		return fail("arguments: %v", err)
	}
	if schema["type"] != "object" {
		return fail("its arguments (%T) must be a struct or a map: a tool's arguments are a JSON object", *new(In))
	}
	t.schema = schema
	if t.args, err = contract.New(name+" arguments", schema); err != nil {
		return fail("arguments: %v", err)
	}
	t.run = func(ctx context.Context, args any) (json.RawMessage, error) {
		b, err := json.Marshal(args)
		if err != nil {
			return nil, err
		}
		var in In
		if err := json.Unmarshal(b, &in); err != nil {
			return nil, fmt.Errorf("the arguments do not decode: %v", err)
		}
		out, err := f(ctx, in)
		if err != nil {
			return nil, err
		}
		return json.Marshal(out)
	}
	return t
}

// ToolCallTrace is one tool call of a Call, as traced.
type ToolCallTrace struct {
	// Attempt (over the whole call, as CallTrace.Attempts counts) and
	// Round (within the attempt) count from 1.
	Attempt int    `json:"attempt"`
	Round   int    `json:"round"`
	ID      string `json:"id"`
	Name    string `json:"name"`
	// Args are the arguments the model sent (JSON).
	Args json.RawMessage `json:"args"`
	// Result is the tool's answer (JSON); Error, when the call failed, is
	// what the model was told instead.
	Result   json.RawMessage `json:"result,omitempty"`
	Error    string          `json:"error,omitempty"`
	Duration time.Duration   `json:"duration_ns"`
	// ReviewID is the approval's review, for a tool with RequireApproval.
	ReviewID string `json:"review_id,omitempty"`
}

// toolSet is a function's tools by name, checked once by NewInfer.
type toolSet struct {
	defs   []llm.ToolDef
	byName map[string]*toolDef
	rounds int
}

// compileTools checks Spec.Tools and MaxToolRounds.
func compileTools(fn string, tools []Tool, maxRounds int) (*toolSet, error) {
	fail := func(format string, args ...any) error {
		return &CompileError{Function: fn, Message: fmt.Sprintf(format, args...)}
	}
	if maxRounds < 0 {
		return nil, fail("MaxToolRounds %d is negative", maxRounds)
	}
	if len(tools) == 0 {
		return nil, nil
	}
	set := &toolSet{byName: map[string]*toolDef{}, rounds: maxRounds}
	if set.rounds == 0 {
		set.rounds = DefaultMaxToolRounds
	}
	for i, t := range tools {
		if t == nil {
			return nil, fail("Tools[%d] is nil (make tools with NewTool)", i)
		}
		d := t.tool()
		if d.err != nil {
			return nil, fail("%v", d.err)
		}
		if set.byName[d.name] != nil {
			return nil, fail("two tools are named %q", d.name)
		}
		set.byName[d.name] = d
		set.defs = append(set.defs, llm.ToolDef{Name: d.name, Description: d.description, Schema: d.schema})
	}
	return set, nil
}

// toolError is a tool result telling the model what went wrong.
func toolError(call llm.ToolCall, msg string) llm.ToolResult {
	b, _ := json.Marshal(msg)
	return llm.ToolResult{ID: call.ID, Name: call.Name, Content: b, IsError: true}
}

// errUndecidable ends a Call whose tool approval cannot be decided (no
// store, no sink, no terminal) or whose context ended while waiting.
var errUndecidable = errors.New("the tool call's approval could not be decided")
