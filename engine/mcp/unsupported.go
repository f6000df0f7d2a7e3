package mcp

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stratum-go/stratum/engine"
)

// Tools of the original's current release this stratum does not carry
// (DESIGN, "the original's current release"): they are listed, with the
// original's arguments, so an agent that calls them learns why and what to
// use instead rather than "unknown tool".

// ErrTypeNotSupported: a tool of the original this stratum does not carry.
const ErrTypeNotSupported = "not_supported"

type distillArgs struct {
	ProjectDir string `json:"project_dir,omitempty" jsonschema:"the original's transcript directory (not used)"`
	OutPath    string `json:"out_path,omitempty" jsonschema:"the original's sidecar path (not used)"`
	WindowDays int    `json:"window_days,omitempty" jsonschema:"the original's window in days (not used)"`
	MinCount   int    `json:"min_count,omitempty" jsonschema:"the original's recurrence bar (not used)"`
	Apply      bool   `json:"apply,omitempty" jsonschema:"the original's reserved flag (not used)"`
}

func (s *server) registerUnsupportedTools(srv *mcp.Server) {
	addTool(srv, s, &mcp.Tool{Name: "stratum_distill", Annotations: readOnly(), Description: `Not supported by this stratum (the original's STRAT-DISTILL transcript distiller, which mines Claude Code session transcripts for repeated workflows). Always answers {status: "error", error_type: "not_supported", message} naming the alternative: the /stratum-onboard skill (project memory from the code) and the skills stratum install writes; a repeated workflow is best written down as a spec (stratum_validate) and run as a flow.`},
		func(context.Context, *mcp.CallToolRequest, distillArgs) (engine.Response, error) {
			return engine.Response{"status": "error", "error_type": ErrTypeNotSupported,
				"message": "stratum_distill (transcript distillation) is not supported by this stratum: it reads no session transcripts. " +
					"Instead: write the repeated workflow as a *.stratum.yaml spec (check it with stratum_validate, run it with stratum_plan or stratum run), " +
					"and use the /stratum-onboard skill (stratum install) to record project patterns in .claude/memory/MEMORY.md."}, nil
		})
}
