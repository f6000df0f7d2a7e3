package mcp

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stratum-go/stratum/engine/state"
)

// Progress of a fan-out the server runs (stratum_parallel_start), as the
// original streams it: each event is its BuildStreamEvent envelope
// ({schema_version, flow_id, step_id, task_id, seq, ts, kind, metadata,
// reply_required}, seq counted per task) queued as it happens, at most
// progressQueueMax (the oldest dropped first), and sent as MCP progress
// notifications (progress = seq, message = the envelope's JSON) to a
// stratum_parallel_poll that carries a progress token — the call alive at
// that moment, as the original drains its queue under the poll's
// context. Our executors do not stream an agent's tool use, so the events
// are the tasks' lifecycle: agent_started when a task starts running,
// task_state when it settles ({state, duration_ms, error}).

// streamSchemaVersion is the original's BuildStreamEvent contract version.
const streamSchemaVersion = "0.2.7"

// progressQueueMax bounds the events waiting for a poll.
const progressQueueMax = 1000

// streamEvent is one event as its envelope's JSON and its seq.
type streamEvent struct {
	seq int
	msg []byte
}

// progressQueue holds a fan-out's events until a poll sends them.
type progressQueue struct {
	mu     sync.Mutex
	events []streamEvent
	seqs   map[string]int
}

// envelope is the original's BuildStreamEvent JSON (task_id left out
// when there is none).
func envelope(flowID, stepID, taskID string, seq int, kind string, metadata map[string]any) []byte {
	m := map[string]any{"schema_version": streamSchemaVersion, "flow_id": flowID, "step_id": stepID, "seq": seq,
		"ts": time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), "kind": kind, "metadata": metadata, "reply_required": false}
	if taskID != "" {
		m["task_id"] = taskID
	}
	b, _ := json.Marshal(m)
	return b
}

// onTask is a fan-out's OnTask: the task's change of state as an event.
func (q *progressQueue) onTask(flowID, stepID string) func(state.ParallelTask) {
	return func(t state.ParallelTask) {
		var kind string
		meta := map[string]any{}
		switch {
		case t.State == state.TaskRunning:
			kind = "agent_started"
			meta["runs"] = t.Runs
			if t.Branch != "" {
				meta["branch"] = t.Branch
			}
		case state.TaskTerminal(t.State):
			kind = "task_state"
			meta["state"] = t.State
			meta["duration_ms"] = t.DurationMS(time.Now())
			if t.Error != nil {
				meta["error"] = *t.Error
			}
		default:
			return
		}
		q.mu.Lock()
		defer q.mu.Unlock()
		if q.seqs == nil {
			q.seqs = map[string]int{}
		}
		seq := q.seqs[t.TaskID]
		q.seqs[t.TaskID] = seq + 1
		if len(q.events) >= progressQueueMax {
			q.events = q.events[1:]
		}
		q.events = append(q.events, streamEvent{seq: seq, msg: envelope(flowID, stepID, t.TaskID, seq, kind, meta)})
	}
}

// take removes and returns the queued events.
func (q *progressQueue) take() []streamEvent {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.events
	q.events = nil
	return out
}

// sendProgress sends a fan-out's queued events to the poll req when it
// carries a progress token (otherwise they stay queued).
func (s *server) sendProgress(ctx context.Context, req *mcp.CallToolRequest, fr *fanRun) {
	if fr == nil || req == nil || req.Session == nil || req.Params == nil {
		return
	}
	tok := req.Params.GetProgressToken()
	if tok == nil {
		return
	}
	for _, ev := range fr.events.take() {
		if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(ev.seq), Message: string(ev.msg)}); err != nil {
			if ctx.Err() == nil {
				s.log.Warn("parallel fan-out: progress notification", "error", err.Error())
			}
			return
		}
	}
}
