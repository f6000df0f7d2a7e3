package judge

import (
	"context"
	"encoding/json"
	"strings"
)

// DefaultDecomposeModel is stratum_decompose's model when none is named
// (the original's claude-haiku-4-5, with its provider).
const DefaultDecomposeModel = "anthropic/claude-haiku-4-5"

// Bounds of a decomposition (the original's).
const (
	decomposeRequestCap = 2000
	decomposeWorkCap    = 800
	maxDecomposed       = 6
)

// DecomposedPredicate is one predicate a decomposition drafted.
type DecomposedPredicate struct {
	ID          string `json:"id"`
	Type        string `json:"type"`
	Statement   string `json:"statement"`
	AppliedGate int    `json:"applied_gate"`
}

// Decomposition is stratum_decompose's answer: a draft predicate list, or
// none with applied false and the reason. It never holds a predicate the
// model did not give.
type Decomposition struct {
	Predicates []DecomposedPredicate `json:"predicates"`
	Applied    bool                  `json:"applied"`
	Reason     string                `json:"reason"`
	Model      string                `json:"model"`
}

// DecomposePrompt is the original's prompt: the request and a summary of
// the work, capped, and the kernel's taxonomy word for word.
func DecomposePrompt(request, work string) string {
	req := capText(strings.TrimSpace(request), decomposeRequestCap)
	w := capText(strings.TrimSpace(work), decomposeWorkCap)
	return "Decompose the user's request into 1-6 atomic acceptance predicates " +
		"— the checkable conditions that must hold for the request to be " +
		"\"done\". Use EXACTLY this taxonomy for each predicate's \"type\":\n" +
		"  - \"deterministic\": a mechanically-checkable expression (exit code, " +
		"file exists, git status, schema valid). NOT subjective.\n" +
		"  - \"verified\": needs tool/filesystem evidence to confirm — e.g. " +
		"\"the tests pass\", \"the endpoint returns 200\". (Tests passing is " +
		"verified, NOT deterministic.)\n" +
		"  - \"judged\": subjective / requires interpretation — e.g. \"the " +
		"error message is actionable\".\n\n" +
		"USER REQUEST:\n" + req + "\n\n" +
		"WORK PERFORMED (tool summary):\n" + w + "\n\n" +
		"Reply with ONLY this JSON, no prose:\n" +
		"{\"predicates\": [{\"id\": \"p1\", \"type\": \"verified\", " +
		"\"statement\": \"<one atomic condition>\"}, ...]}"
}

func capText(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		return string(r[:n])
	}
	return s
}

// Decompose asks complete (one LLM call with the prompt) for a draft and
// checks it: 1–6 predicates, each with an id, a type of the taxonomy and a
// statement. Any failure — the call, JSON, the shape — answers no
// predicates, applied false and reason "decompose_error:KIND" (the
// original fails open the same way; it never fabricates a predicate).
func Decompose(ctx context.Context, complete func(context.Context, string) (string, error), request, work, model string) Decomposition {
	fail := func(kind string) Decomposition {
		return Decomposition{Predicates: []DecomposedPredicate{}, Reason: "decompose_error:" + kind, Model: model}
	}
	text, err := complete(ctx, DecomposePrompt(request, work))
	if err != nil {
		return fail("CompletionError")
	}
	raw := strings.TrimSpace(text)
	if strings.HasPrefix(raw, "```") {
		if i := strings.Index(raw, "\n"); i >= 0 {
			raw = raw[i+1:]
		}
		raw = strings.TrimSuffix(strings.TrimSpace(raw), "```")
	}
	if i, j := strings.Index(raw, "{"), strings.LastIndex(raw, "}"); i >= 0 && j > i {
		raw = raw[i : j+1]
	}
	var doc struct {
		Predicates []struct {
			ID        *string `json:"id"`
			Type      *string `json:"type"`
			Statement *string `json:"statement"`
		} `json:"predicates"`
	}
	if err := json.Unmarshal([]byte(raw), &doc); err != nil {
		return fail("JSONDecodeError")
	}
	if n := len(doc.Predicates); n < 1 || n > maxDecomposed {
		return fail("ValidationError")
	}
	out := Decomposition{Applied: true, Model: model}
	for _, p := range doc.Predicates {
		if p.ID == nil || p.Type == nil || p.Statement == nil ||
			(*p.Type != "deterministic" && *p.Type != "verified" && *p.Type != "judged") {
			return fail("ValidationError")
		}
		out.Predicates = append(out.Predicates, DecomposedPredicate{ID: *p.ID, Type: *p.Type, Statement: *p.Statement, AppliedGate: 7})
	}
	return out
}
