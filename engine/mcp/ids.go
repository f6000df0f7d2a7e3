package mcp

import (
	"context"

	"github.com/stratum-go/stratum/engine"
)

// resolveFlowID replaces *flowID — a whole flow id or any unique prefix of
// at least 4 characters, as the CLI and the TUI show
// them — with the flow's id (engine.Query.ResolveFlowID), before a tool
// calls the Service. When it cannot, the tool answers what it returns: the
// original's flow_not_found envelope for an unknown or too short id, the
// ambiguous_flow_id envelope (with candidates, the ids the prefix matches)
// for an ambiguous prefix, or a store failure.
func (s *server) resolveFlowID(ctx context.Context, flowID *string) (engine.Response, error) {
	id, err := s.svc.Query().ResolveFlowID(ctx, *flowID)
	if err != nil {
		return answer(nil, err)
	}
	*flowID = id
	return nil, nil
}
