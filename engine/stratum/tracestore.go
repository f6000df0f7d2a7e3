package stratum

import (
	"encoding/json"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/stratum-go/stratum/engine/state"
)

// What a stored Call's trace entry keeps of the call beyond its spend
// (shown by the TUI's Trace pane, `stratum audit` and stratum_audit): its
// inputs, its failed attempts with their violations, its tool calls and
// whether it streamed. A store is shared and lives long, so large inputs,
// tool arguments and results are cut to a bound and marked where they were
// cut; the program's own trace (Runtime.Trace, Options.OnCall) keeps them
// whole.

// Bounds of a stored trace entry, in bytes of JSON.
const (
	storedInputsMax = 16 << 10 // a call's inputs
	storedToolMax   = 4 << 10  // one tool call's arguments, and its result
)

// callDetail adds to tr what the store keeps of rec beyond its spend.
func callDetail(tr *state.TraceRecord, rec *CallTrace) {
	if in, cut := boundValue(tr.Inputs, storedInputsMax); cut {
		tr.Inputs, tr.InputsTruncated = boundedInputs(in), true
	}
	for i, v := range rec.Violations {
		n := i + 1
		if i < len(rec.failedAt) {
			n = rec.failedAt[i]
		}
		tr.Retries = append(tr.Retries, state.AttemptFailure{Attempt: n, Violations: slices.Clone(v)})
	}
	for _, tc := range rec.ToolCalls {
		r := state.ToolCallRecord{Attempt: tc.Attempt, Round: tc.Round, ID: tc.ID, Name: tc.Name, Error: tc.Error,
			DurationMS: tc.Duration.Milliseconds(), ReviewID: tc.ReviewID}
		var cutArgs, cutResult bool
		r.Args, cutArgs = boundRaw(tc.Args, storedToolMax)
		r.Result, cutResult = boundRaw(tc.Result, storedToolMax)
		r.Truncated = cutArgs || cutResult
		tr.ToolCalls = append(tr.ToolCalls, r)
	}
	tr.Streamed = rec.Streamed
	tr.Error, _ = cutString(rec.Error, storedToolMax)
}

// boundedInputs is a cut inputs value as the record's object.
func boundedInputs(v any) map[string]any {
	if m, ok := v.(map[string]any); ok {
		return m
	}
	return map[string]any{"input": v}
}

// boundRaw is raw JSON cut to at most max bytes (values shortened as
// boundValue does), and whether it was cut. Text that is not JSON (a
// model's malformed arguments) is kept as a JSON string.
func boundRaw(raw json.RawMessage, max int) (json.RawMessage, bool) {
	if len(raw) == 0 {
		return nil, false
	}
	if !json.Valid(raw) {
		s, cut := cutString(string(raw), max/2)
		b, _ := json.Marshal(s)
		return b, cut
	}
	if len(raw) <= max {
		return raw, false
	}
	v, err := decodeExact(raw)
	if err != nil {
		s, _ := cutString(string(raw), max/2)
		b, _ := json.Marshal(s)
		return b, true
	}
	v, _ = boundValue(v, max)
	b, err := json.Marshal(v)
	if err != nil {
		return nil, true
	}
	return b, true
}

// boundValue is v (plain JSON values) cut until its JSON is at most max
// bytes, and whether it was cut. Each cut is marked where it was made:
// a string ends with "…(+N bytes)", a list with an element "…(+N more)",
// an object with a key "…" saying how many keys were left out. Nesting
// deeper than the cut's depth becomes "…". When no cut fits, the value is
// a string saying how large it was.
func boundValue(v any, max int) (any, bool) {
	b, err := json.Marshal(v)
	if err != nil || len(b) <= max {
		return v, false
	}
	for _, lim := range []int{1024, 256, 64, 16} {
		cut := shorten(v, lim, 0)
		if c, err := json.Marshal(cut); err == nil && len(c) <= max {
			return cut, true
		}
	}
	return fmt.Sprintf("…(%d bytes of JSON not kept)", len(b)), true
}

// shorten cuts strings to lim bytes, lists and objects to lim/4 (at least
// 4) elements, and nesting to 8 levels.
func shorten(v any, lim, depth int) any {
	items := max(4, lim/4)
	switch x := v.(type) {
	case string:
		s, _ := cutString(x, lim)
		return s
	case []any:
		if depth >= 8 {
			return "…"
		}
		n := min(len(x), items)
		out := make([]any, 0, n+1)
		for _, e := range x[:n] {
			out = append(out, shorten(e, lim, depth+1))
		}
		if len(x) > n {
			out = append(out, fmt.Sprintf("…(+%d more)", len(x)-n))
		}
		return out
	case map[string]any:
		if depth >= 8 {
			return "…"
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		n := min(len(keys), items)
		out := make(map[string]any, n+1)
		for _, k := range keys[:n] {
			out[k] = shorten(x[k], lim, depth+1)
		}
		if len(keys) > n {
			out["…"] = fmt.Sprintf("(+%d more keys)", len(keys)-n)
		}
		return out
	}
	return v
}

// cutString is s cut to at most lim bytes on a rune boundary, marked with
// how many bytes were left out, and whether it was cut.
func cutString(s string, lim int) (string, bool) {
	if len(s) <= lim {
		return s, false
	}
	n := lim
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + fmt.Sprintf("…(+%d bytes)", len(s)-n), true
}
