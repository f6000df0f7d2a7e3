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
// unique prefix, Query.ResolveFlowID) as Flow renders it, found true;
// or, when ID names no flow (or several), the object that says so
// (FlowRefused, FlowNotFound), found false. err is a store failure: it
// has no JSON answer.
func QueryFlow(ctx context.Context, svc *engine.Service, id string, now time.Time) (v any, found bool, err error) {
	resolved, err := svc.Query().ResolveFlowID(ctx, id)
	if e := engine.AsError(err); e != nil {
		return FlowRefused(id, e), false, nil
	} else if err != nil {
		return nil, false, err
	}
	f, err := svc.Query().FlowWithSpec(ctx, resolved)
	if errors.Is(err, engine.ErrNotFound) {
		return FlowNotFound(id), false, nil
	} else if err != nil {
		return nil, false, err
	}
	return Flow(f, now), true, nil
}
