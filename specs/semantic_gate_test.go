package specs

import (
	"strings"
	"testing"
)

// A human gate may time out to kill or revise, never to approve: the
// deadline would approve as the system a gate only a person may approve
// (policy-human, as for policy: flag|skip on such a gate).
func TestHumanGateTimeoutRule(t *testing.T) {
	gate := func(fields string) string {
		src := strings.Replace(parseBase02, "    mode: gate\n", "    mode: gate\n    timeout: 60\n"+fields, 1)
		return src + "      - {id: g, function: approve, depends_on: [a], on_approve: ~, on_revise: a, on_kill: ~}\n"
	}
	tests := []struct {
		name, src string
		code      string // "" : no diagnostic
	}{
		{"human-approve", gate("    approver: human\n    on_timeout: approve\n"), CodePolicyHuman},
		{"human-kill", gate("    approver: human\n    on_timeout: kill\n"), ""},
		{"human-revise", gate("    approver: human\n    on_timeout: revise\n"), ""},
		{"human-default", gate("    approver: human\n"), ""},
		{"any-approve", gate("    approver: any\n    on_timeout: approve\n"), ""},
		{"default-approve", gate("    on_timeout: approve\n"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ds := Parse("t.yaml", []byte(tt.src), testCompile)
			if tt.code == "" {
				if len(ds) != 0 {
					t.Fatalf("want no diagnostics, got:\n%s", dumpDiags(ds))
				}
				return
			}
			if len(ds) != 1 || ds[0].Code != tt.code || ds[0].Severity != SeverityError || ds[0].Path != "functions.approve.on_timeout" {
				t.Fatalf("want one error %s at functions.approve.on_timeout, got:\n%s", tt.code, dumpDiags(ds))
			}
		})
	}
}
