package specs

import (
	"fmt"
	"sort"
	"strings"
)

// editDistance is the optimal-string-alignment (restricted Damerau-Levenshtein)
// distance between a and b, counted in runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	n, m := len(ra), len(rb)
	if n == 0 {
		return m
	}
	if m == 0 {
		return n
	}
	// Three rolling rows are enough for OSA.
	prev2 := make([]int, m+1)
	prev := make([]int, m+1)
	cur := make([]int, m+1)
	for j := 0; j <= m; j++ {
		prev[j] = j
	}
	for i := 1; i <= n; i++ {
		cur[0] = i
		for j := 1; j <= m; j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			v := min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				v = min(v, prev2[j-2]+1)
			}
			cur[j] = v
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[m]
}

// closest returns the candidate nearest to s: edit distance ≤ 2 (case
// insensitive), or else a shared prefix of at least 3 runes (or one being a
// prefix of the other). Ties go to the smaller distance, then to the
// candidate that sorts first. "" when nothing is close.
func closest(s string, candidates []string) string {
	if s == "" {
		return ""
	}
	ls := strings.ToLower(s)
	best, bestD := "", 1<<30
	cands := append([]string(nil), candidates...)
	sort.Strings(cands)
	for _, c := range cands {
		if c == s {
			continue
		}
		d := editDistance(ls, strings.ToLower(c))
		limit := 2
		if len([]rune(s)) <= 3 {
			limit = 1
		}
		if d <= limit && d < bestD {
			best, bestD = c, d
		}
	}
	if best != "" {
		return best
	}
	bestP := 0
	for _, c := range cands {
		lc := strings.ToLower(c)
		p := commonPrefix(ls, lc)
		if (p >= 3 || (p >= 2 && (p == len(ls) || p == len(lc)))) && p > bestP {
			best, bestP = c, p
		}
	}
	return best
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// DidYouMean renders `did you mean "x"?` for the candidate closest to s,
// or "" when nothing is close: the one suggestion rule of stratum's
// diagnostics (the Go library's too).
func DidYouMean(s string, candidates []string) string { return didYouMean(s, candidates) }

// didYouMean renders `did you mean "x"?`, or "" when nothing is close.
func didYouMean(s string, candidates []string) string {
	if c := closest(s, candidates); c != "" {
		return fmt.Sprintf("did you mean %q?", c)
	}
	return ""
}

// plainList renders [a, b].
func plainList(names []string) string {
	return "[" + strings.Join(names, ", ") + "]"
}

// suggestBudget bounds the edit-distance work spent on suggestions in one
// Parse (candidates examined), so that a huge spec with many unknown names
// cannot make validation quadratic.
const suggestBudget = 2_000_000

// didYouMean is didYouMean within the checker's suggestion budget.
func (c *checker) didYouMean(s string, candidates []string) string {
	if c.suggestSpent+len(candidates) > suggestBudget {
		return ""
	}
	c.suggestSpent += len(candidates)
	return didYouMean(s, candidates)
}

// shortList renders at most max names as [a, b, …] (with a count of the rest).
func shortList(names []string, limit int) string {
	if len(names) <= limit {
		return plainList(names)
	}
	return fmt.Sprintf("[%s, … (%d more)]", strings.Join(names[:limit], ", "), len(names)-limit)
}

// fieldAliases are names users write for a field under another name; they
// take precedence over edit-distance suggestions.
var fieldAliases = map[string]string{
	"cwd":            "dir",
	"workdir":        "dir",
	"working_dir":    "dir",
	"command":        "cmd",
	"environment":    "env",
	"depends":        "depends_on",
	"dependencies":   "depends_on",
	"needs":          "depends_on",
	"after":          "depends_on",
	"input":          "inputs",
	"outputs":        "output",
	"postconditions": "ensure",
	"asserts":        "ensure",
	"max_retries":    "retries",
	"attempts":       "retries",
	"prompt":         "intent",
	"description":    "intent",
	"timeout_ms":     "budget",
	"schema":         "output_schema",
	"contract":       "output_contract",
	"when":           "skip_if",
	"type":           "mode",
}
