package guard

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/stratum-go/stratum/specs/py"
)

// The server-read evidence builtins.
const (
	fnFileExists   = "server_file_exists"
	fnCommitExists = "git_commit_exists"
	fnCommandZero  = "command_exit_zero"
	fnReceipt      = "verdict_receipt_clean"
)

// parseStatement parses `name(arg, …)`: one call of a builtin whose
// arguments are string literals ('…' or "…") or lists of them. It never
// evaluates anything.
func parseStatement(stmt string) (string, []any, error) {
	p := &stmtParser{s: strings.TrimSpace(stmt)}
	name := p.ident()
	switch name {
	case fnFileExists, fnCommitExists, fnCommandZero, fnReceipt:
	case "":
		return "", nil, errorf(ErrEvidenceParse, "predicate must be a single call: %q", stmt)
	default:
		return "", nil, errorf(ErrEvidenceParse, "unknown trusted builtin %q in %q (server_file_exists, git_commit_exists, command_exit_zero, verdict_receipt_clean)", name, stmt)
	}
	if !p.eat('(') {
		return "", nil, errorf(ErrEvidenceParse, "predicate must be a single call: %q", stmt)
	}
	var args []any
	for !p.eat(')') {
		if len(args) > 0 && !p.eat(',') {
			return "", nil, errorf(ErrEvidenceParse, "predicate args must be literals: %q", stmt)
		}
		if p.eat(')') { // a trailing comma
			break
		}
		a, ok := p.literal()
		if !ok {
			return "", nil, errorf(ErrEvidenceParse, "predicate args must be literals: %q", stmt)
		}
		args = append(args, a)
	}
	if p.skip(); p.i != len(p.s) {
		return "", nil, errorf(ErrEvidenceParse, "predicate must be a single call: %q", stmt)
	}
	return name, args, nil
}

type stmtParser struct {
	s string
	i int
}

func (p *stmtParser) skip() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *stmtParser) eat(c byte) bool {
	p.skip()
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *stmtParser) ident() string {
	p.skip()
	start := p.i
	for p.i < len(p.s) && (p.s[p.i] == '_' || p.s[p.i] >= 'a' && p.s[p.i] <= 'z' || p.s[p.i] >= 'A' && p.s[p.i] <= 'Z' || p.i > start && p.s[p.i] >= '0' && p.s[p.i] <= '9') {
		p.i++
	}
	return p.s[start:p.i]
}

// literal reads a string or a list of strings.
func (p *stmtParser) literal() (any, bool) {
	if p.eat('[') {
		list := []string{}
		for !p.eat(']') {
			if len(list) > 0 && !p.eat(',') {
				return nil, false
			}
			if p.eat(']') {
				break
			}
			s, ok := p.str()
			if !ok {
				return nil, false
			}
			list = append(list, s)
		}
		return list, true
	}
	return p.str()
}

func (p *stmtParser) str() (string, bool) {
	p.skip()
	if p.i >= len(p.s) || p.s[p.i] != '\'' && p.s[p.i] != '"' {
		return "", false
	}
	q := p.s[p.i]
	var b strings.Builder
	for p.i++; p.i < len(p.s); p.i++ {
		c := p.s[p.i]
		switch {
		case c == q:
			p.i++
			return b.String(), true
		case c == '\\' && p.i+1 < len(p.s):
			p.i++
			switch e := p.s[p.i]; e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", false
}

// evidence is one trusted predicate's evaluation.
type evidence struct {
	ID        string `json:"id"`
	Statement string `json:"statement"`
	Met       bool   `json:"met"`
	Evidence  string `json:"evidence"`
}

// evaluate evaluates the trusted predicates server-side (all must be met).
func (s *Service) evaluate(ctx context.Context, preds []Predicate, root *string, entries []Entry) (bool, []evidence) {
	all := true
	out := []evidence{}
	for i, p := range preds {
		stmt := pstring(p, "statement")
		id := pstring(p, "id")
		if id == "" {
			id = "e" + strconv.Itoa(i)
		}
		met, why := s.evalOne(ctx, stmt, root, entries)
		out = append(out, evidence{ID: id, Statement: stmt, Met: met, Evidence: why})
		all = all && met
	}
	return all, out
}

func (s *Service) evalOne(ctx context.Context, stmt string, root *string, entries []Entry) (bool, string) {
	name, args, err := parseStatement(stmt)
	if err != nil {
		return false, err.Error()
	}
	if name != fnReceipt && root == nil {
		return false, "no workspace_root registered for trusted file/command/git evidence"
	}
	str := func() (string, bool) {
		if len(args) != 1 {
			return "", false
		}
		v, ok := args[0].(string)
		return v, ok
	}
	switch name {
	case fnFileExists:
		rel, ok := str()
		if !ok {
			return false, "server_file_exists expects one string path"
		}
		real, ok := py.ConfinedPath(rel, *root)
		if !ok {
			return false, fmt.Sprintf("%s missing (or outside workspace_root)", rel)
		}
		if fi, err := os.Stat(real); err != nil || !fi.Mode().IsRegular() {
			return false, rel + " missing"
		}
		return true, rel + " exists"
	case fnCommitExists:
		sha, ok := str()
		if !ok || sha == "" || strings.HasPrefix(sha, "-") {
			return false, "git_commit_exists expects one sha string"
		}
		code, err := s.runCmd(ctx, []string{"git", "rev-parse", "--verify", "--quiet", sha + "^{commit}"}, *root, 5*time.Second)
		if err != nil {
			return false, "git rev-parse failed: " + err.Error()
		}
		short := sha
		if len(short) > 12 {
			short = short[:12]
		}
		if code == 0 {
			return true, "commit " + short + " present"
		}
		return false, "commit " + short + " absent"
	case fnCommandZero:
		return s.commandZero(ctx, args, *root)
	}
	digest, ok := str()
	if !ok {
		return false, "verdict_receipt_clean expects one digest string"
	}
	for _, e := range entries {
		if e.EntryDigest == digest && (e.Outcome == outcomeApplied || e.Outcome == "review_clean") {
			return true, fmt.Sprintf("receipt %.12s found (clean)", digest)
		}
	}
	return false, fmt.Sprintf("no clean receipt for %.12s", digest)
}

func (s *Service) commandZero(ctx context.Context, args []any, root string) (bool, string) {
	if s.getenv(EnvAllowCommands) != "1" {
		return false, "command execution disabled (set " + EnvAllowCommands + "=1)"
	}
	if len(args) != 1 {
		return false, "command_exit_zero expects one list[str]"
	}
	argv, ok := args[0].([]string)
	if !ok || len(argv) == 0 {
		return false, "command_exit_zero expects one non-empty list[str]"
	}
	timeout := 120 * time.Second
	if v, err := strconv.Atoi(s.getenv(EnvCommandTimeout)); err == nil && v > 0 {
		timeout = time.Duration(v) * time.Second
	}
	code, err := s.runCmd(ctx, argv, root, timeout)
	if err != nil {
		return false, "command failed: " + err.Error()
	}
	return code == 0, fmt.Sprintf("%s exited %d", argv[0], code)
}

func (s *Service) runCmd(ctx context.Context, argv []string, dir string, timeout time.Duration) (int, error) {
	if s.Run == nil {
		return -1, fmt.Errorf("this server runs no commands")
	}
	return s.Run(ctx, argv, dir, timeout)
}
