package guard

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/stratum-go/stratum/engine"
)

// Actions are the `stratum guard` actions (the original's).
func Actions() []string { return []string{"register", "transition", "override", "migrate", "history"} }

// CLI runs one `stratum guard ACTION`: the action's arguments are one JSON
// object on stdin (the original's wire format, so its adapters work
// unchanged), the answer is printed as indented JSON on stdout. A refused
// transition is a normal answer (exit 0); an error answer ({status:
// "error", …}) exits 1. Other errors (the store) are returned.
func (s *Service) CLI(ctx context.Context, action string, stdin io.Reader, stdout io.Writer) (int, error) {
	raw, err := io.ReadAll(stdin)
	if err != nil {
		return 1, err
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	var resp engine.Response
	switch action {
	case "register":
		resp, err = cliCall(ctx, raw, s.Register)
	case "transition":
		resp, err = cliCall(ctx, raw, s.Transition)
	case "override":
		resp, err = cliCall(ctx, raw, s.Override)
	case "migrate":
		resp, err = cliCall(ctx, raw, s.Migrate)
	case "history":
		resp, err = cliCall(ctx, raw, s.History)
	default:
		return 2, fmt.Errorf("unknown guard action %q; expected one of: %s", action, strings.Join(Actions(), ", "))
	}
	if err != nil {
		return 1, err
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(resp); err != nil {
		return 1, err
	}
	if resp["status"] == "error" {
		return 1, nil
	}
	return 0, nil
}

// cliCall decodes the arguments strictly (an unknown key is an error, as
// the original's keyword arguments are) and runs f.
func cliCall[T any](ctx context.Context, raw []byte, f func(context.Context, T) (engine.Response, error)) (engine.Response, error) {
	var in T
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return errorf(ErrInvalidArguments, "guard stdin payload: %v", err).Response(), nil
	}
	if missing := missingFields(raw, in); len(missing) > 0 {
		return errorf(ErrInvalidArguments, "missing required arguments: %s", strings.Join(missing, ", ")).Response(), nil
	}
	return Answer(f(ctx, in))
}

// missingFields names the required fields (no omitempty) absent from raw.
func missingFields(raw []byte, in any) []string {
	var present map[string]json.RawMessage
	if json.Unmarshal(raw, &present) != nil {
		return nil
	}
	var out []string
	for _, f := range requiredFields(in) {
		if _, ok := present[f]; !ok {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}

// CLIHelp is the long help of `stratum guard`.
const CLIHelp = `Guard runs one guarded-transition action over the shared store, as the MCP tools
stratum_guard_register|transition|override|migrate|history do: the action's arguments are
one JSON object on stdin (the original's stratum-mcp guard wire format), the answer is printed
as JSON. A refused transition is a normal answer (exit 0, "status": "refused"); an error
answer ("status": "error", with error_type) exits 1.

A resource's ledger is append-only and hash-chained: "history" verifies the chain and names the
first broken entry (error_type ledger_corrupt, first_broken). override and migrate need the
token in this process's STRATUM_GUARD_OVERRIDE_TOKEN; command_exit_zero predicates need
STRATUM_GUARD_ALLOW_COMMANDS=1 (timeout STRATUM_GUARD_CMD_TIMEOUT_S, default 120 s).`

// CLIExamples are the examples of `stratum guard`.
const CLIExamples = `  echo '{"resource_id": "app:FEAT-1", "graph": {"design": ["build"]}, "initial": "design",
        "workspace_root": "'$PWD'", "edge_predicates": {"design->build":
        [{"id": "doc", "statement": "server_file_exists('docs/design.md')"}]}}' | stratum guard register
  echo '{"resource_id": "app:FEAT-1", "from_state": "design", "to_state": "build"}' | stratum guard transition
  echo '{"resource_id": "app:FEAT-1"}' | stratum guard history | jq '.ledger[].outcome'`
