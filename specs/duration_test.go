package specs

import (
	"strings"
	"testing"
	"time"
)

// TestAfterNeverBeforeNow: a deadline is never before the time it was
// computed at, and never more than MaxDuration after it, whatever the
// count: 9300000000 seconds overflowed into the year 1737.
func TestAfterNeverBeforeNow(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		n    int64
		unit time.Duration
		want time.Time
	}{
		{3600, time.Second, now.Add(time.Hour)},
		{1500, time.Millisecond, now.Add(1500 * time.Millisecond)},
		{0, time.Second, now},
		{-5, time.Second, now},
		{9300000000, time.Second, now.Add(MaxDuration)},
		{1 << 62, time.Millisecond, now.Add(MaxDuration)},
		{int64(MaxDuration / time.Second), time.Second, now.Add(MaxDuration)},
	}
	for _, c := range cases {
		got := After(now, c.n, c.unit)
		if !got.Equal(c.want) || got.Before(now) {
			t.Errorf("After(now, %d, %v) = %v, want %v", c.n, c.unit, got, c.want)
		}
	}
}

// TestDurationTooLong: every duration a spec gives is range-checked, with
// the code duration-too-long and a suggestion; the largest accepted value
// passes.
func TestDurationTooLong(t *testing.T) {
	gate := func(v string) string {
		return "version: \"0.2\"\nfunctions:\n  g: {mode: gate, timeout: " + v + "}\nflows:\n  main:\n    input: {}\n" +
			"    steps:\n      - {id: w, intent: write}\n      - {id: g, function: g, on_approve: ~, on_revise: w, on_kill: ~}\n"
	}
	budget := func(v string) string {
		return "version: \"0.2\"\nflows:\n  main:\n    input: {}\n    budget: {ms: " + v + "}\n" +
			"    steps:\n      - {id: s, intent: x}\n"
	}
	cases := []struct {
		name, src, path, sugg string
	}{
		{"gate timeout in ms", gate("9300000000"), "functions.g.timeout", "did you mean 9300000?"},
		{"gate timeout past int64", gate("18446744073709551616"), "functions.g.timeout", "Use at most 31536000"},
		{"gate timeout as a big float", gate("1e30"), "functions.g.timeout", "Use at most 31536000"},
		{"budget ms in µs", budget("30000000000000"), "flows.main.budget.ms", "did you mean 30000000000?"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, ds := Parse("x.stratum.yaml", []byte(c.src), testCompile)
			var found *Diagnostic
			for i := range ds {
				if ds[i].Code == CodeDurationTooLong {
					found = &ds[i]
				}
			}
			if found == nil || found.Path != c.path || !strings.Contains(found.Suggestion, c.sugg) || found.Severity != SeverityError {
				t.Fatalf("diagnostics %v, want duration-too-long at %s suggesting %q", ds, c.path, c.sugg)
			}
		})
	}
	for _, ok := range []string{gate("31536000"), budget("31536000000")} {
		if _, ds := Parse("x.stratum.yaml", []byte(ok), testCompile); ds.HasErrors() {
			t.Errorf("the longest duration refused: %v", ds)
		}
	}
}
