package specs

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestValidateJSONGoldens: `stratum validate --json` (WriteResults in the
// json format) puts warnings in a warnings array beside errors, both
// always arrays, for each of the specs whose stratum_validate answers
// engine/mcp keeps (testdata/specs/json/NAME.cli.json; the --strict
// variant is NAME.strict.json for a spec with warnings). Regenerate with
// -update and review the diff.
func TestValidateJSONGoldens(t *testing.T) {
	root := filepath.Join("..", "testdata", "specs")
	for _, name := range []string{
		"warning/routing-target-runs-on-fail",
		"warning/routing-target-runs-guardrails",
		"warning/routing-target-runs-schema",
		"warning/unchecked-keyword",
		"valid/v02-gates",
		"invalid/duration-too-long-gate-timeout",
	} {
		file := filepath.Join(root, name+".stratum.yaml")
		for _, strict := range []bool{false, true} {
			results, _ := ValidateFiles([]string{file}, strict, testCompile)
			results[0].File = filepath.Base(file)
			for i := range results[0].Diagnostics {
				results[0].Diagnostics[i].File = results[0].File
			}
			var b bytes.Buffer
			if err := WriteResults(&b, FormatJSON, results); err != nil {
				t.Fatal(err)
			}
			suffix := ".cli.json"
			if strict {
				if len(results[0].Diagnostics.Warnings()) == 0 {
					continue
				}
				suffix = ".strict.json"
			}
			golden := filepath.Join(root, "json", filepath.Base(name)+suffix)
			if updateGoldens() {
				if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b.Bytes(), want) {
				t.Errorf("validate --json %s (strict %v):\n%s\nwant (%s):\n%s", name, strict, b.Bytes(), golden, want)
			}
		}
	}
}
