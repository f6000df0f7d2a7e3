package guard

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/stratum-go/stratum/engine"
)

// RegisterRequest is stratum_guard_register's arguments.
type RegisterRequest struct {
	ResourceID     string                 `json:"resource_id" jsonschema:"opaque, client-namespaced id of the resource (e.g. compose:FEAT-1)"`
	Graph          map[string][]string    `json:"graph" jsonschema:"the legal edges: from_state -> [to_state, ...]"`
	EdgePredicates map[string][]Predicate `json:"edge_predicates" jsonschema:"'from->to' -> predicates {id, type (deterministic|verified|judged), statement}"`
	Initial        string                 `json:"initial" jsonschema:"the resource's first state"`
	Terminal       []string               `json:"terminal,omitempty" jsonschema:"states without outgoing edges"`
	Stakes         map[string]string      `json:"stakes,omitempty" jsonschema:"'from->to' -> cheap|default|paranoid"`
	WorkspaceRoot  string                 `json:"workspace_root,omitempty" jsonschema:"absolute directory the server reads file, git and command evidence in"`
}

// Register registers a resource's policy, or answers status "exists" for
// the same policy again; another policy is guard_already_registered (use
// Migrate).
func (s *Service) Register(ctx context.Context, in RegisterRequest) (engine.Response, error) {
	if strings.TrimSpace(in.ResourceID) == "" || strings.ContainsRune(in.ResourceID, 0) {
		return nil, errorf(ErrInvalidArguments, "resource_id must be a non-empty string without NUL")
	}
	var root *string
	if in.WorkspaceRoot != "" {
		root = &in.WorkspaceRoot
	}
	if err := s.validatePolicy(in.Graph, in.EdgePredicates, in.Initial, in.Terminal, in.Stakes, root); err != nil {
		return nil, err
	}
	in.EdgePredicates, in.Terminal, in.Stakes = orEmptyPreds(in.EdgePredicates), orEmpty(in.Terminal), orEmptyMap(in.Stakes)
	sum, err := Checksum(in.Graph, in.EdgePredicates, in.Terminal, in.Stakes)
	if err != nil {
		return nil, err
	}
	status := "registered"
	err = s.Store.Update(ctx, func(tx engine.Tx) error {
		r, err := load(tx, in.ResourceID)
		if err != nil {
			return err
		}
		if r.reg != nil {
			if r.reg.Checksum != sum {
				return errorf(ErrAlreadyRegistered, "guard %q already registered with a different policy; use migrate", in.ResourceID)
			}
			status = "exists"
			return nil
		}
		status = "registered"
		reg := Registry{ResourceID: in.ResourceID, Graph: in.Graph, EdgePredicates: in.EdgePredicates, Initial: in.Initial,
			Terminal: in.Terminal, Stakes: in.Stakes, Checksum: sum, GraphVersion: 1, WorkspaceRoot: root}
		return putRegistry(tx, r.key, reg)
	})
	if err != nil {
		return nil, err
	}
	return engine.Response{"guard_id": in.ResourceID, "checksum": sum, "status": status}, nil
}

// validatePolicy checks a policy as the original does, failing closed:
// state names, the initial state, every predicate's type (a deterministic
// one must be a known builtin), commands allowed when used, the workspace
// root, and a trusted predicate on every paranoid edge.
func (s *Service) validatePolicy(graph map[string][]string, preds map[string][]Predicate, initial string, terminal []string, stakes map[string]string, root *string) error {
	if len(graph) == 0 {
		return errorf(ErrInvalidArguments, "graph must have at least one state")
	}
	nodes := map[string]bool{}
	for from, tos := range graph {
		nodes[from] = true
		for _, t := range tos {
			nodes[t] = true
		}
	}
	for _, t := range terminal {
		nodes[t] = true
	}
	nodes[initial] = true
	for n := range nodes {
		if !stateNameRe.MatchString(n) {
			return errorf(ErrInvalidStateName, "invalid state name %q (allowed: [A-Za-z0-9_.-])", n)
		}
	}
	if _, ok := graph[initial]; !ok && !contains(terminal, initial) {
		return errorf(ErrInvalidStateName, "initial state %q is not a node in the graph", initial)
	}
	needsRoot, usesCommand := false, false
	for _, ps := range preds {
		for _, p := range ps {
			switch ptype(p) {
			case typeVerified, typeJudged:
				continue
			case typeTrusted:
			default:
				return errorf(ErrEvidenceParse, "unknown predicate type %q (expected deterministic|verified|judged)", ptype(p))
			}
			name, _, err := parseStatement(pstring(p, "statement"))
			if err != nil {
				return err
			}
			usesCommand = usesCommand || name == fnCommandZero
			needsRoot = needsRoot || name != fnReceipt
		}
	}
	if usesCommand && s.getenv(EnvAllowCommands) != "1" {
		return errorf(ErrCommandsDisabled, "guard declares command_exit_zero predicates; set %s=1 to register", EnvAllowCommands)
	}
	if needsRoot && root == nil {
		return errorf(ErrInvalidWorkspace, "guard declares file/git/command evidence but no workspace_root given")
	}
	if root != nil {
		if fi, err := statDir(*root); !filepath.IsAbs(*root) || err != nil || !fi {
			return errorf(ErrInvalidWorkspace, "workspace_root must be an existing absolute directory: %q", *root)
		}
	}
	for edge, st := range stakes {
		switch st {
		case "cheap", "default":
		case "paranoid":
			trusted := false
			for _, p := range preds[edge] {
				trusted = trusted || ptype(p) == typeTrusted
			}
			if !trusted {
				return errorf(ErrParanoidNeedsTrust, "paranoid edge %q has no trusted-evidence predicate", edge)
			}
		default:
			return errorf(ErrInvalidArguments, "stakes of %q must be cheap, default or paranoid, not %q", edge, st)
		}
	}
	return nil
}

// HistoryRequest is stratum_guard_history's arguments.
type HistoryRequest struct {
	ResourceID string `json:"resource_id" jsonschema:"the guarded resource"`
}

// History answers the resource's state and its whole ledger, after
// verifying the chain (a broken one is ledger_corrupt naming the first
// broken entry).
func (s *Service) History(ctx context.Context, in HistoryRequest) (engine.Response, error) {
	var r *resource
	err := s.Store.View(ctx, func(tx engine.Tx) error {
		var err error
		r, err = load(tx, in.ResourceID)
		return err
	})
	if err != nil {
		return nil, err
	}
	if r.reg == nil {
		return nil, errorf(ErrNotFound, "no guard registered for %q", in.ResourceID)
	}
	ledger := make([]Entry, len(r.entries))
	copy(ledger, r.entries)
	return engine.Response{"resource_id": in.ResourceID, "current_state": r.state(), "graph_version": r.reg.GraphVersion,
		"checksum": r.reg.Checksum, "ledger": ledger}, nil
}

// Answer turns a guard error into its answer ({status: "error", …}); other
// errors are returned as they are.
func Answer(resp engine.Response, err error) (engine.Response, error) {
	if err == nil {
		return resp, nil
	}
	if r := asGuardError(err); r != nil {
		return r, nil
	}
	return nil, err
}
