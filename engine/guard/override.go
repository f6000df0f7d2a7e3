package guard

import (
	"context"
	"crypto/subtle"
	"errors"
	"strings"

	"github.com/stratum-go/stratum/engine"
)

// OverrideRequest is stratum_guard_override's arguments.
type OverrideRequest struct {
	ResourceID    string `json:"resource_id" jsonschema:"the guarded resource"`
	FromState     string `json:"from_state" jsonschema:"the state the resource is in"`
	ToState       string `json:"to_state" jsonschema:"the state to move it to (a legal edge)"`
	OverrideToken string `json:"override_token" jsonschema:"the out-of-band token (the server's STRATUM_GUARD_OVERRIDE_TOKEN)"`
	Rationale     string `json:"rationale" jsonschema:"why the edge's predicates are bypassed (required)"`
	ResolvedBy    string `json:"resolved_by,omitempty" jsonschema:"must be human (the default)"`
}

// MigrateRequest is stratum_guard_migrate's arguments.
type MigrateRequest struct {
	ResourceID        string                 `json:"resource_id" jsonschema:"the guarded resource"`
	NewGraph          map[string][]string    `json:"new_graph" jsonschema:"the new legal edges"`
	NewEdgePredicates map[string][]Predicate `json:"new_edge_predicates" jsonschema:"the new predicates per edge"`
	OverrideToken     string                 `json:"override_token" jsonschema:"the out-of-band token (the server's STRATUM_GUARD_OVERRIDE_TOKEN)"`
	Rationale         string                 `json:"rationale" jsonschema:"why the policy changes (required)"`
	NewTerminal       []string               `json:"new_terminal,omitempty" jsonschema:"the new terminal states"`
	NewStakes         map[string]string      `json:"new_stakes,omitempty" jsonschema:"the new stakes per edge"`
}

// checkToken checks the override token against the server's.
func (s *Service) checkToken(token string) error {
	want := s.getenv(EnvOverrideToken)
	if want == "" {
		return errorf(ErrOverrideUnavailable, "override unavailable: %s not set in server env", EnvOverrideToken)
	}
	if subtle.ConstantTimeCompare([]byte(token), []byte(want)) != 1 {
		return errorf(ErrOverrideUnavailable, "override token mismatch")
	}
	return nil
}

// Override moves a legal edge without its predicates, recorded as a
// deviation with its rationale: the one sanctioned bypass.
func (s *Service) Override(ctx context.Context, in OverrideRequest) (engine.Response, error) {
	if err := s.checkToken(in.OverrideToken); err != nil {
		return nil, err
	}
	if in.ResolvedBy == "" {
		in.ResolvedBy = "human"
	}
	if in.ResolvedBy != "human" {
		return nil, errorf(ErrOverrideUnavailable, "override requires resolved_by='human'")
	}
	if strings.TrimSpace(in.Rationale) == "" {
		return nil, errorf(ErrOverrideUnavailable, "override requires a non-empty rationale")
	}
	var resp engine.Response
	err := s.Store.Update(ctx, func(tx engine.Tx) error {
		r, err := s.checked(tx, TransitionRequest{ResourceID: in.ResourceID})
		if err != nil {
			return err
		}
		if err := legal(r, in.FromState, in.ToState); err != nil {
			if ge := (*Error)(nil); errors.As(err, &ge) && ge.Type == ErrIllegalEdge {
				ge.Message += " (override bypasses predicates, not the graph)"
			}
			return err
		}
		rationale := in.Rationale
		e, err := r.appendEntry(tx, Entry{TSMillis: s.now().UnixMilli(), FromState: in.FromState, ToState: in.ToState, Outcome: outcomeDeviation,
			Kind: "deviation", ResolvedBy: in.ResolvedBy, Rationale: &rationale, Channel: s.Channel})
		if err != nil {
			return err
		}
		resp = engine.Response{"status": "deviation", "ledger_ref": e.EntryDigest, "current_state": r.state(), "rationale": rationale}
		return nil
	})
	if errors.Is(err, engine.ErrConflict) {
		return nil, errorf(ErrStaleFromState, "another transition of %q was recorded meanwhile", in.ResourceID)
	}
	return resp, err
}

// Migrate replaces a resource's policy (token-gated, with a rationale):
// the graph version goes up and a graph_version entry records it; the
// current state must stay a node of the new graph.
func (s *Service) Migrate(ctx context.Context, in MigrateRequest) (engine.Response, error) {
	if err := s.checkToken(in.OverrideToken); err != nil {
		return nil, err
	}
	if strings.TrimSpace(in.Rationale) == "" {
		return nil, errorf(ErrOverrideUnavailable, "migrate requires a non-empty rationale")
	}
	in.NewEdgePredicates, in.NewTerminal, in.NewStakes = orEmptyPreds(in.NewEdgePredicates), orEmpty(in.NewTerminal), orEmptyMap(in.NewStakes)
	var resp engine.Response
	err := s.Store.Update(ctx, func(tx engine.Tx) error {
		r, err := s.checked(tx, TransitionRequest{ResourceID: in.ResourceID})
		if err != nil {
			return err
		}
		if err := s.validatePolicy(in.NewGraph, in.NewEdgePredicates, r.reg.Initial, in.NewTerminal, in.NewStakes, r.reg.WorkspaceRoot); err != nil {
			return err
		}
		cur := r.state()
		if _, ok := in.NewGraph[cur]; !ok && !contains(in.NewTerminal, cur) {
			return errorf(ErrInvalidStateName, "current_state %q is not a node in the new graph", cur)
		}
		sum, err := Checksum(in.NewGraph, in.NewEdgePredicates, in.NewTerminal, in.NewStakes)
		if err != nil {
			return err
		}
		rationale := in.Rationale
		e, err := r.appendEntry(tx, Entry{TSMillis: s.now().UnixMilli(), FromState: cur, ToState: cur, Outcome: outcomeMigrated,
			Kind: "graph_version", ResolvedBy: "human", Rationale: &rationale, Channel: s.Channel})
		if err != nil {
			return err
		}
		reg := *r.reg
		reg.Graph, reg.EdgePredicates, reg.Terminal, reg.Stakes = in.NewGraph, in.NewEdgePredicates, in.NewTerminal, in.NewStakes
		reg.Checksum, reg.GraphVersion = sum, reg.GraphVersion+1
		if err := putRegistry(tx, r.key, reg); err != nil {
			return err
		}
		resp = engine.Response{"status": "migrated", "checksum": sum, "graph_version": reg.GraphVersion, "ledger_ref": e.EntryDigest, "rationale": rationale}
		return nil
	})
	return resp, err
}
