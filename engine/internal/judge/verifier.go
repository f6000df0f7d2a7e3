package judge

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/stratum-go/stratum/engine/internal/contract"
	"github.com/stratum-go/stratum/specs"
)

// Verifier answers for tiers 2 and 3: an LLM or an agent CLI given the
// prompt, working in Dir (a read-only copy of the staged turn) without
// write tools.
type Verifier interface {
	Verify(ctx context.Context, req VerifyRequest) (Answer, error)
}

// VerifyRequest is one question to a verifier.
type VerifyRequest struct {
	Tier      string // TierT2 or TierT3 (the adversary)
	Predicate string // the predicate's id
	Prompt    string
	// Dir is a copy of the staged turn (artifacts/, modified/,
	// manifest.json) made for this question, read-only; citations name
	// paths relative to it.
	Dir string
}

// Answer is a verifier's reply: the text holding its JSON verdict, who
// answered (Agent: "claude", "codex", a provider; Model: its model; ""
// unknown), what it cost in USD (0 unknown) and, for tier 3, its isolation
// (ModeJailed or ModeColdFallback; "" = ModeColdFallback).
type Answer struct {
	Text  string
	Agent string
	Model string
	USD   float64
	Mode  string
}

// verdict is a verifier's answer, once it fits the verdict contract.
type verdict struct {
	PredicateID string     `json:"predicate_id"`
	Verdict     string     `json:"verdict"`
	Confidence  int        `json:"confidence"`
	Reason      string     `json:"reason"`
	Evidence    []Evidence `json:"evidence"`
}

// verdictContract is the contract of a verifier's answer.
var verdictContract = func() *contract.Checker {
	c, err := contract.New("JudgeVerdict", map[string]any{
		"type":     "object",
		"required": []any{"verdict", "confidence"},
		"properties": map[string]any{
			"predicate_id": map[string]any{"type": "string"},
			"verdict":      map[string]any{"enum": []any{Met, NotMet, Ambiguous}},
			"confidence":   map[string]any{"type": "integer", "minimum": 0, "maximum": 10},
			"reason":       map[string]any{"type": "string"},
			"evidence": map[string]any{"type": "array", "items": map[string]any{
				"type":     "object",
				"required": []any{"source", "quote"},
				"properties": map[string]any{
					"source": map[string]any{"type": "string"},
					"quote":  map[string]any{"type": "string"},
					"tier":   map[string]any{"type": "string"},
				},
			}},
		},
	})
	if err != nil {
		panic(err)
	}
	return c
}()

// citationRe is the shape of a citation (the original's).
var citationRe = regexp.MustCompile(`^(artifacts|modified)/[^:]+:[0-9]+$`)

const verifierPrompt = `You are a verifier. You read evidence already produced by a worker and
decide whether each predicate is met by that evidence. You do not run
commands. You do not modify files. You cite every claim with a path
under artifacts/ or modified/ in this exact format: <bucket>/<path>:<line>.

For each predicate you receive, return JSON:
{
  "predicate_id": "<id>",
  "verdict": "met" | "not_met" | "ambiguous",
  "confidence": <integer 1-10>,
  "reason": "<one or two sentences>",
  "evidence": [
    {"source": "artifacts/pytest_output.txt:142", "quote": "12 passed", "tier": "T2"}
  ]
}
`

const adversaryPrompt = `You are an ADVERSARY. A worker has claimed a predicate is met. Your job is
to BREAK that claim: find a concrete counterexample, in the staged evidence,
showing the predicate is NOT met. You have NOT seen the worker's reasoning
or any prior verification — only the predicate and the staged tree. Do not
assume good faith; assume the claim is wrong until the evidence forces
otherwise. Cite every claim with a path under artifacts/ or modified/ in
this exact format: <bucket>/<path>:<line>.

Return JSON:
{
  "predicate_id": "<id>",
  "verdict": "not_met" | "met" | "ambiguous",
  "confidence": <integer 1-10>,
  "reason": "<the counterexample, or why you could not find one>",
  "evidence": [
    {"source": "modified/foo.py:42", "quote": "...", "tier": "T3"}
  ]
}
Reply "not_met" if you found a real counterexample; "met" ONLY if you
genuinely tried and the evidence withstands the attack; "ambiguous" if the
staged evidence is insufficient to attack or defend.
`

// prompt is the question of tier for p. The adversary's prompt is built
// from the predicate alone: it never sees tier 2's verdict or reasoning.
func prompt(tier string, p *specs.Predicate) string {
	head := verifierPrompt
	if tier == TierT3 {
		head = adversaryPrompt
	}
	var b strings.Builder
	b.WriteString(head)
	b.WriteString("\nYou are operating against the staging tree in your working directory.\n")
	b.WriteString("Predicate id: " + p.ID + "\n")
	b.WriteString("Predicate type: " + p.Type + "\n")
	b.WriteString("Predicate statement: " + p.Statement + "\n")
	b.WriteString("Applied gate (confidence floor for 'met'): " + itoa(p.AppliedGate) + "\n")
	return b.String()
}

// parseVerdict reads a verifier's answer: a JSON object (a ``` fence and
// prose around the outermost {…} are allowed) that fits the verdict
// contract, whose citations name staged files.
func parseVerdict(text string, staged *tree, tier string) (*verdict, error) {
	raw := strings.TrimSpace(text)
	if strings.HasPrefix(raw, "```") {
		lines := strings.Split(raw, "\n")
		lines = lines[1:]
		if n := len(lines); n > 0 && strings.HasPrefix(strings.TrimSpace(lines[n-1]), "```") {
			lines = lines[:n-1]
		}
		raw = strings.TrimSpace(strings.Join(lines, "\n"))
	}
	if !strings.HasPrefix(raw, "{") {
		if i, j := strings.Index(raw, "{"), strings.LastIndex(raw, "}"); i >= 0 && j > i {
			raw = raw[i : j+1]
		}
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, errorf(ErrVerifierAnswer, "%s verifier answer is not JSON: %v", tier, err)
	}
	if vs := verdictContract.Check(v); len(vs) > 0 {
		return nil, &Error{Type: ErrVerifierAnswer, Message: tier + " verifier answer does not fit the verdict contract: " + strings.Join(vs, "; "), Violations: vs}
	}
	var out verdict
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		return nil, errorf(ErrVerifierAnswer, "%s verifier answer: %v", tier, err)
	}
	for i := range out.Evidence {
		if out.Evidence[i].Tier == "" {
			out.Evidence[i].Tier = tier
		}
		if err := checkCitation(out.Evidence[i].Source, staged); err != nil {
			return nil, err
		}
	}
	return &out, nil
}

// checkCitation: the canonical shape, inside its bucket, naming a staged
// file.
func checkCitation(src string, staged *tree) error {
	if !citationRe.MatchString(src) {
		return errorf(ErrCitation, "bad citation format: %q", src)
	}
	p := src[:strings.LastIndex(src, ":")]
	bucket, _, _ := strings.Cut(p, "/")
	full := path.Clean(p)
	if !strings.HasPrefix(full, bucket+"/") {
		return errorf(ErrCitation, "citation escapes staging bucket: %q", src)
	}
	if !staged.isFile(full) {
		return errorf(ErrCitation, "citation path missing in staging tree: %q", src)
	}
	return nil
}

// readOnlyCopy extracts the staged tree into a fresh directory beside the
// turn, with read-only permissions, for one verifier question.
func readOnlyCopy(turnDir string, staged *tree) (string, error) {
	dst, err := os.MkdirTemp(filepath.Dir(turnDir), ".verify-")
	if err != nil {
		return "", err
	}
	err = extract(staged, dst)
	if err == nil {
		err = chmodDirs(dst, 0o555)
	}
	if err != nil {
		removeCopy(dst)
		return "", err
	}
	return dst, nil
}

// extract writes the tree's directories and files under dst.
func extract(staged *tree, dst string) error {
	dirs := make([]string, 0, len(staged.dirs))
	for d := range staged.dirs {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(dst, filepath.FromSlash(d)), 0o755); err != nil {
			return err
		}
	}
	for _, name := range staged.names {
		data, err := staged.readFile(name)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, filepath.FromSlash(name)), data, 0o444); err != nil {
			return err
		}
	}
	return nil
}

func chmodDirs(root string, mode fs.FileMode) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.Chmod(p, mode)
		}
		return nil
	})
}

func removeCopy(dir string) {
	_ = chmodDirs(dir, 0o755)
	_ = os.RemoveAll(dir)
}

// tampered returns the first path where copy differs from the staged tree
// (a file changed, added or removed), "" when identical.
func tampered(staged *tree, copyDir string) string {
	seen := map[string]bool{}
	diff := ""
	_ = filepath.WalkDir(copyDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || diff != "" {
			return err
		}
		rel, _ := filepath.Rel(copyDir, p)
		rel = filepath.ToSlash(rel)
		seen[rel] = true
		switch {
		case d.IsDir():
			if !staged.dirs[rel] {
				diff = rel
			}
		case d.Type().IsRegular() && staged.isFile(rel):
			a, _ := os.ReadFile(p)
			b, _ := staged.readFile(rel)
			if !bytes.Equal(a, b) {
				diff = rel
			}
		default:
			diff = rel // a file it added, or a symlink or device it made
		}
		return nil
	})
	if diff != "" {
		return diff
	}
	for _, name := range staged.names {
		if !seen[name] {
			return name
		}
	}
	for d := range staged.dirs {
		if !seen[d] && (diff == "" || d < diff) {
			diff = d
		}
	}
	return diff
}
