package goal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/internal/judge"
	"github.com/stratum-go/stratum/specs"
	"github.com/stratum-go/stratum/specs/exprlang"
)

// Statuses of a goal (the original's GoalResult.status, and in_progress
// for goal_status).
const (
	StatusMet              = "met"
	StatusNotMet           = "not_met"
	StatusAwaitingDecision = "awaiting_decision"
	StatusBudgetExhausted  = "budget_exhausted"
	StatusKilled           = "killed"
	StatusInProgress       = "in_progress"
)

// WorkerFunc runs one worker turn: the prompt through the named agent in
// dir; it returns the agent's answer and the run's correlation id.
type WorkerFunc func(ctx context.Context, agent, prompt, dir string) (text, correlationID string, err error)

// Service runs goals over a store.
type Service struct {
	Store engine.Store
	Now   func() time.Time
	// Worker runs worker turns (nil: a driven goal cannot run).
	Worker WorkerFunc
	// Verifier builds the judge's verifier for a directory (nil: only
	// deterministic predicates can be decided).
	Verifier func(dir string) (judge.Verifier, error)
	// JudgeRoot is where the judge stages turns.
	JudgeRoot string
	// Modified lists the files a worker turn changed in its directory,
	// relative to it, for the judge to stage under modified/ (nil: none
	// are collected). `stratum mcp` reads them from git, as the original
	// does.
	Modified func(ctx context.Context, dir string) []string
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// State is a goal's registration.
type State struct {
	GoalID         string           `json:"goal_id"`
	Predicates     []map[string]any `json:"predicates"`
	PredicatesHash string           `json:"predicates_hash"`
	Mode           string           `json:"mode"`
	Prompt         string           `json:"prompt"`
	Stakes         string           `json:"stakes"`
	MaxTurns       int              `json:"max_turns"`
	Autonomy       map[string]bool  `json:"autonomy"`
	Worker         string           `json:"worker"`
	Dir            string           `json:"dir"`
	Round          int              `json:"round"`
	Status         string           `json:"status"` // in_progress, awaiting_decision, met, budget_exhausted, killed
	Archived       bool             `json:"archived,omitempty"`
	DecisionGates  []DecisionGate   `json:"decision_gates"`
}

// DecisionGate is one advisory pause (the original's DecisionGateRecord).
type DecisionGate struct {
	Round          int     `json:"round"`
	Decision       string  `json:"decision"` // pending, approve, revise, kill
	Note           string  `json:"note"`
	ResolvedBy     *string `json:"resolved_by"`
	Outcome        *string `json:"outcome"`
	ResolvedAtMS   *int64  `json:"resolved_at_ms"`
	RejectionNote  *string `json:"rejection_note"`
	RegisteredAtMS int64   `json:"registered_at_ms"`
}

// Turn is one worker→judge turn, appended to the goal's ledger.
type Turn struct {
	Turn               int            `json:"turn"`
	AgentCorrelationID string         `json:"agent_correlation_id"`
	DurationMS         int64          `json:"duration_ms"`
	JudgeResult        map[string]any `json:"judge_result"`
	Met                bool           `json:"met"`
}

// goalKey is a goal's store key: "g" and a digest (a guard's key is plain
// hex, so they never meet).
func goalKey(id string) string {
	h := sha256.Sum256([]byte("goal\x00" + id))
	return "g" + hex.EncodeToString(h[:])[:31]
}

// goalErr is the original's error answer.
func goalErr(typ, format string, a ...any) engine.Response {
	return engine.Response{"status": "error", "error_type": typ, "message": fmt.Sprintf(format, a...)}
}

// load reads a goal (nil: none) and its turns.
func load(tx engine.Tx, id string) (*State, []Turn, error) {
	raw, ok, err := tx.GuardGet(goalKey(id))
	if err != nil || !ok {
		return nil, nil, err
	}
	var st State
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, nil, fmt.Errorf("goal %s: its state is not readable: %w", id, err)
	}
	raws, err := tx.GuardEntries(goalKey(id))
	if err != nil {
		return nil, nil, err
	}
	turns := make([]Turn, 0, len(raws))
	for _, b := range raws {
		var t Turn
		if err := json.Unmarshal(b, &t); err != nil {
			return nil, nil, fmt.Errorf("goal %s: turn %d is not readable: %w", id, len(turns), err)
		}
		turns = append(turns, t)
	}
	return &st, turns, nil
}

func (s *Service) read(ctx context.Context, id string) (*State, []Turn, error) {
	var st *State
	var turns []Turn
	err := s.Store.View(ctx, func(tx engine.Tx) error {
		var err error
		st, turns, err = load(tx, id)
		return err
	})
	return st, turns, err
}

// save writes the state and, when t is set, appends the turn, in one
// transaction.
func (s *Service) save(ctx context.Context, st *State, t *Turn, turns int) error {
	raw, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return s.Store.Update(ctx, func(tx engine.Tx) error {
		if err := tx.GuardPut(goalKey(st.GoalID), raw); err != nil {
			return err
		}
		if t == nil {
			return nil
		}
		b, err := json.Marshal(t)
		if err != nil {
			return err
		}
		return tx.GuardAppend(goalKey(st.GoalID), turns, b)
	})
}

// predicates turns the goal's predicates into the judge's, compiling the
// deterministic ones' statements.
func predicates(raw []map[string]any) ([]*specs.Predicate, engine.Response) {
	if len(raw) == 0 {
		return nil, goalErr("invalid_predicate", "predicates must list at least one predicate")
	}
	seen := map[string]bool{}
	out := make([]*specs.Predicate, 0, len(raw))
	for i, m := range raw {
		id, _ := m["id"].(string)
		stmt, _ := m["statement"].(string)
		typ, _ := m["type"].(string)
		if id == "" || stmt == "" || seen[id] {
			return nil, goalErr("invalid_predicate", "Failed to parse predicate %d: it needs a unique id and a statement", i)
		}
		seen[id] = true
		p := &specs.Predicate{ID: id, Type: typ, Statement: stmt, AppliedGate: specs.DefaultAppliedGate, Raw: m}
		if g, ok := m["applied_gate"].(float64); ok && g >= 1 && g <= 10 {
			p.AppliedGate = int(g)
		}
		switch typ {
		case specs.PredicateDeterministic:
			e, err := exprlang.Compile(specs.ExprPredicate, stmt)
			if err != nil {
				return nil, goalErr("invalid_predicate", "Failed to parse predicate %q: %v", id, err)
			}
			p.Expr = e
		case specs.PredicateVerified, specs.PredicateJudged:
		default:
			return nil, goalErr("invalid_predicate", "Failed to parse predicate %q: type must be deterministic, verified or judged, not %q", id, typ)
		}
		out = append(out, p)
	}
	return out, nil
}

func hashOf(v any) string {
	b, _ := json.Marshal(v)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
