package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs"
)

// The values of an iteration loop (iteration.go runs the loop): result
// fingerprints for stagnation, scores, the accumulator's extraction and
// dedup keys.

// iterFingerprint is the hex sha256 of the result's canonical JSON.
func iterFingerprint(result any) string {
	b, err := specs.CanonicalJSON(result)
	if err != nil {
		// Not encodable canonically (should not happen for JSON input):
		// fall back to Go's encoding, then to the printed value.
		if b, err = json.Marshal(result); err != nil {
			b = []byte(fmt.Sprintf("%#v", result))
		}
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// iterFingerprintStagnant reports whether the previous stagnationWindow-1 entries
// of the step's history all carry this fingerprint.
func iterFingerprintStagnant(history []state.IterationEntry, fingerprint string) bool {
	need := stagnationWindow - 1
	if len(history) < need {
		return false
	}
	for _, e := range history[len(history)-need:] {
		if e.ResultFingerprint != fingerprint {
			return false
		}
	}
	return true
}

// iterationScore converts a score_expr value to a number. Booleans, strings,
// null and non-finite numbers are not scores.
func iterationScore(v any) (float64, bool) {
	var f float64
	switch n := v.(type) {
	case float64:
		f = n
	case float32:
		f = float64(n)
	case int:
		f = float64(n)
	case int8:
		f = float64(n)
	case int16:
		f = float64(n)
	case int32:
		f = float64(n)
	case int64:
		f = float64(n)
	case uint:
		f = float64(n)
	case uint8:
		f = float64(n)
	case uint16:
		f = float64(n)
	case uint32:
		f = float64(n)
	case uint64:
		f = float64(n)
	case json.Number:
		x, err := strconv.ParseFloat(string(n), 64)
		if err != nil {
			return 0, false
		}
		f = x
	default:
		return 0, false
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// iterPriorScores lists the scores of the current loop's earlier reports.
func iterPriorScores(entries []state.IterationEntry) []any {
	out := []any{}
	for _, e := range entries {
		if e.Score != nil {
			out = append(out, *e.Score)
		}
	}
	return out
}

// iterBestFields are the best_score / best_iteration response values (null when
// nothing was scored).
func iterBestFields(best *state.IterationBest) (any, any) {
	if best == nil || best.Score == nil {
		return nil, nil
	}
	return *best.Score, best.Iteration
}

// iterAccumulate evaluates the step's accumulate expression on the result
// and adds the items not yet in the accumulator, deduplicated by the canonical
// JSON of accumulate_key (or of the whole item when there is no key or the
// key expression fails for that item). It returns how many items were new. An
// error (the expression fails or does not return a list) adds nothing.
func iterAccumulate(ctx context.Context, step *specs.Step, acc *state.Accumulator, result any, root string) (int, error) {
	v, err := evalValue(ctx, step.Accumulate, specs.EvalEnv{Result: result, Root: root})
	if err != nil {
		return 0, fmt.Errorf("accumulate '%s' raised: %v", step.Accumulate.Source, err)
	}
	items, ok := v.([]any)
	if !ok {
		return 0, fmt.Errorf("accumulate '%s' must return a list, got %s", step.Accumulate.Source, iterationValueKind(v))
	}
	seen := make(map[string]bool, len(acc.Keys))
	for _, k := range acc.Keys {
		seen[k] = true
	}
	added := 0
	for _, item := range items {
		keyVal := item
		if step.AccumulateKey != nil {
			if k, err := evalValue(ctx, step.AccumulateKey, specs.EvalEnv{Item: item, Root: root}); err == nil {
				keyVal = k
			}
		}
		key := iterCanonicalKey(keyVal)
		if seen[key] {
			continue
		}
		seen[key] = true
		acc.Items = append(acc.Items, item)
		acc.Keys = append(acc.Keys, key)
		added++
	}
	return added, nil
}

// iterationValueKind names a value's JSON type for messages.
func iterationValueKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	}
	if _, ok := iterationScore(v); ok {
		return "a number"
	}
	switch n := v.(type) {
	case float64:
		if math.IsNaN(n) || math.IsInf(n, 0) {
			return "a non-finite number"
		}
	}
	return fmt.Sprintf("%T", v)
}

// iterCanonicalKey is the dedup key of an accumulated item.
func iterCanonicalKey(v any) string {
	b, err := specs.CanonicalJSON(v)
	if err != nil {
		if b, err = json.Marshal(v); err != nil {
			return fmt.Sprintf("%#v", v)
		}
	}
	return string(b)
}

// iterCopyItems returns a shallow copy of the item list (never nil).
func iterCopyItems(items []any) []any {
	out := make([]any, len(items))
	copy(out, items)
	return out
}
