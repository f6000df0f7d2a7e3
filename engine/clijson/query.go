package clijson

import (
	"context"
	"errors"
	"time"

	"github.com/stratum-go/stratum/engine"
)

// QueryHelp is the long help of `stratum query` (cobra's Long): its three
// forms, the objects' keys and the flow statuses.
const QueryHelp = `Query reads the store and prints JSON in the original's "stratum-mcp query" shapes:
"query flows" and "query gates" print a list of objects, "query flow ID" one object; each
object has "_schema_version": "1" and the original's keys, plus ours. Flow statuses: running,
awaiting_gate, complete, killed, failed, budget_exhausted; a flow nothing drives any more (its
runner exited or died) keeps its status and adds "stalled": true. An unknown flow id exits 1 with
{"error": {"code": "NOT_FOUND", …}}.`

// QueryFlow is `stratum query flow ID`: the flow ID names (its id or a
// unique prefix, Query.ResolveFlowID) as Flow renders it, exit 0; or,
// when ID names no flow (or several), the object that says so
// (FlowRefused, FlowNotFound), exit 1. An error is a store failure: it
// has no JSON answer (exit 1).
func QueryFlow(ctx context.Context, svc *engine.Service, id string, now time.Time) (answer any, status int, _ error) {
	resolved, err := svc.Query().ResolveFlowID(ctx, id)
	if e := engine.AsError(err); e != nil {
		return FlowRefused(id, e), statusFailure, nil
	} else if err != nil {
		return nil, statusFailure, err
	}
	f, err := svc.Query().FlowWithSpec(ctx, resolved)
	if errors.Is(err, engine.ErrNotFound) {
		return FlowNotFound(id), statusFailure, nil
	} else if err != nil {
		return nil, statusFailure, err
	}
	return Flow(f, now), 0, nil
}
