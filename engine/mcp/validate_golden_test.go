package mcp_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateGoldens = flag.Bool("update", false, "rewrite the golden files")

// validateGoldenSpecs are the specs whose stratum_validate answer is kept
// in testdata/specs/json/NAME.mcp.json: the warning corpus (ordinary specs
// the original answers {valid: true, errors: []}), a valid spec, and
// an invalid one (warnings are looked for only in a spec without errors).
var validateGoldenSpecs = []string{
	"warning/routing-target-runs-on-fail",
	"warning/routing-target-runs-guardrails",
	"warning/routing-target-runs-schema",
	"warning/unchecked-keyword",
	"valid/v02-gates",
	"invalid/duration-too-long-gate-timeout",
}

// TestValidateGoldens: stratum_validate, called through the MCP client,
// answers warnings apart from errors: a spec with warnings only is
// {valid: true, errors: [], warnings: [...]}, a clean one exactly the
// original's {valid: true, errors: []}, and an invalid one lists only its
// errors in errors. Regenerate with -update and review the diff.
func TestValidateGoldens(t *testing.T) {
	s := start(t)
	root := filepath.Join("..", "..", "testdata", "specs")
	for _, name := range validateGoldenSpecs {
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join(root, name+".stratum.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			out, isErr := s.call("stratum_validate", map[string]any{"spec": string(src)})
			if isErr {
				t.Fatalf("isError: %v", out)
			}
			got, err := json.MarshalIndent(out, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden := filepath.Join(root, "json", filepath.Base(name)+".mcp.json")
			if *updateGoldens {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("stratum_validate %s:\n%s\nwant (%s):\n%s", name, got, golden, want)
			}
			// The rule the goldens show, stated: errors holds errors only.
			errs, _ := out["errors"].([]any)
			for _, e := range errs {
				if sev := e.(map[string]any)["severity"]; sev != "error" {
					t.Errorf("a %v in errors", sev)
				}
			}
			if valid := out["valid"] == true; valid != (len(errs) == 0) {
				t.Errorf("valid %v with %d errors", out["valid"], len(errs))
			}
			if w, has := out["warnings"]; has && len(w.([]any)) == 0 || !has && strings.HasPrefix(name, "warning/") && !strings.Contains(name, "guarded") {
				t.Errorf("warnings %v", w)
			}
		})
	}
}
