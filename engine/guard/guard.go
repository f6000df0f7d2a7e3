package guard

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/stratum-go/stratum/engine"
)

// Error types (the original's).
const (
	ErrAlreadyRegistered   = "guard_already_registered"
	ErrNotFound            = "guard_not_found"
	ErrTampered            = "guard_tampered"
	ErrIllegalEdge         = "illegal_edge"
	ErrStaleFromState      = "stale_from_state"
	ErrIdempotencyConflict = "idempotency_conflict"
	ErrLedgerCorrupt       = "ledger_corrupt"
	ErrInvalidStateName    = "invalid_state_name"
	ErrInvalidWorkspace    = "invalid_workspace_root"
	ErrCommandsDisabled    = "command_execution_disabled"
	ErrParanoidNeedsTrust  = "paranoid_edge_needs_trusted_evidence"
	ErrEvidenceParse       = "evidence_parse_error"
	ErrOverrideUnavailable = "override_unavailable"
	ErrResourceIDMismatch  = "resource_id_mismatch"
	ErrInvalidArguments    = "invalid_arguments"
)

// Error is a guard error: its Type is one of the Err* constants.
type Error struct {
	Type    string
	Message string
}

func (e *Error) Error() string { return e.Type + ": " + e.Message }

// Response is the error's answer: {status: "error", error_type, message}.
func (e *Error) Response() engine.Response {
	return engine.Response{"status": "error", "error_type": e.Type, "message": e.Message}
}

func errorf(typ, format string, a ...any) *Error {
	return &Error{Type: typ, Message: fmt.Sprintf(format, a...)}
}

// Environment variables the server reads (the original's).
const (
	// EnvOverrideToken is the token override and migrate require: set in
	// the environment of the process that serves them, never given to an
	// agent.
	EnvOverrideToken = "STRATUM_GUARD_OVERRIDE_TOKEN"
	// EnvAllowCommands=1 allows command_exit_zero predicates.
	EnvAllowCommands = "STRATUM_GUARD_ALLOW_COMMANDS"
	// EnvCommandTimeout is command_exit_zero's timeout in seconds (default 120).
	EnvCommandTimeout = "STRATUM_GUARD_CMD_TIMEOUT_S"
)

// CommandRunner runs argv in dir and returns its exit status; an error is
// a command that could not run (or ran out of time).
type CommandRunner func(ctx context.Context, argv []string, dir string, timeout time.Duration) (int, error)

// Service serves the guard operations over a store.
type Service struct {
	Store engine.Store
	// Now is the clock of ledger entries (default time.Now).
	Now func() time.Time
	// Getenv reads the token and the command settings (default os.Getenv).
	Getenv func(string) string
	// Run runs git and command_exit_zero's commands (nil: they fail with
	// the reason).
	Run CommandRunner
	// Channel is how requests reach this service (mcp, cli), recorded with
	// every entry.
	Channel string
	// Judge decides the predicates of the verifier tiers (nil: they are
	// not met, with the reason).
	Judge *Judge
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Service) getenv(k string) string {
	if s.Getenv != nil {
		return s.Getenv(k)
	}
	return os.Getenv(k)
}

// Predicate is one edge predicate as the client wrote it (kept whole, so
// the checksum covers every field): id, type (deterministic, verified,
// judged) and statement are read.
type Predicate = map[string]any

func ptype(p Predicate) string {
	if t, ok := p["type"].(string); ok && t != "" {
		return t
	}
	return typeTrusted
}

func pstring(p Predicate, k string) string {
	s, _ := p[k].(string)
	return s
}

// Predicate types.
const (
	typeTrusted  = "deterministic"
	typeVerified = "verified"
	typeJudged   = "judged"
)

// Registry is a resource's registration.
type Registry struct {
	ResourceID     string                 `json:"resource_id"`
	Graph          map[string][]string    `json:"graph"`
	EdgePredicates map[string][]Predicate `json:"edge_predicates"`
	Initial        string                 `json:"initial"`
	Terminal       []string               `json:"terminal"`
	Stakes         map[string]string      `json:"stakes"`
	Checksum       string                 `json:"checksum"`
	GraphVersion   int                    `json:"graph_version"`
	WorkspaceRoot  *string                `json:"workspace_root"`
}

// Entry is one ledger entry (the original's LedgerEntry, plus channel).
type Entry struct {
	TSMillis       int64          `json:"ts_ms"`
	FromState      string         `json:"from_state"`
	ToState        string         `json:"to_state"`
	Outcome        string         `json:"outcome"` // applied | refused | deviation | graph_version
	Kind           string         `json:"kind"`    // transition | deviation | graph_version
	ResolvedBy     string         `json:"resolved_by"`
	IdempotencyKey *string        `json:"idempotency_key"`
	PayloadDigest  *string        `json:"payload_digest"`
	Rationale      *string        `json:"rationale"`
	Verdict        map[string]any `json:"verdict"`
	Channel        string         `json:"channel,omitempty"`
	PrevDigest     string         `json:"prev_digest"`
	EntryDigest    string         `json:"entry_digest"`
}

// Outcomes of entries.
const (
	outcomeApplied   = "applied"
	outcomeRefused   = "refused"
	outcomeDeviation = "deviation"
	outcomeMigrated  = "graph_version"
)

// canonical is v as canonical JSON: sorted keys, compact, no HTML escaping.
func canonical(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	// Round-trip through any so struct fields sort like map keys.
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var generic any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&generic); err != nil {
		return nil, err
	}
	if err := enc.Encode(generic); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func sha(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// digest is an entry's digest: SHA-256 over its canonical JSON without
// entry_digest, followed by the previous entry's digest.
func (e Entry) digest() (string, error) {
	core := e
	core.EntryDigest = ""
	m := map[string]any{}
	raw, err := json.Marshal(core)
	if err != nil {
		return "", err
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return "", err
	}
	delete(m, "entry_digest")
	c, err := canonical(m)
	if err != nil {
		return "", err
	}
	return sha(append(c, e.PrevDigest...)), nil
}

// Checksum is the policy's checksum: SHA-256 over the canonical JSON of
// graph, edge predicates, terminal (sorted) and stakes.
func Checksum(graph map[string][]string, preds map[string][]Predicate, terminal []string, stakes map[string]string) (string, error) {
	t := append([]string{}, terminal...)
	sortStrings(t)
	c, err := canonical(map[string]any{"graph": graph, "edge_predicates": preds, "terminal": t, "stakes": stakes})
	if err != nil {
		return "", errorf(ErrInvalidArguments, "the guard policy is not JSON: %v", err)
	}
	return sha(c), nil
}

// resourceKey is the store key of a resource: a digest, so any id is safe.
func resourceKey(id string) string { return sha([]byte(id))[:32] }

var stateNameRe = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

func edgeKey(from, to string) string { return from + "->" + to }

// requiredFields are the JSON names of in's fields without omitempty.
func requiredFields(in any) []string {
	t := reflect.TypeOf(in)
	var out []string
	for i := range t.NumField() {
		tag := t.Field(i).Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name != "" && name != "-" && !strings.Contains(opts, "omitempty") {
			out = append(out, name)
		}
	}
	return out
}
