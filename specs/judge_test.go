package specs

import (
	"os"
	"reflect"
	"testing"
)

// A judge step parses into Step.Judge with the original's defaults: stakes
// "default", applied_gate 7, no budget, one attempt; predicates keep what
// was written (Raw) and deterministic ones are compiled.
func TestJudgeStepIR(t *testing.T) {
	src, err := os.ReadFile("../testdata/specs/valid/v03-judge-stakes-budget.stratum.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sp, ds := Parse("j.yaml", src, testCompile)
	if sp == nil {
		t.Fatal(ds.Error())
	}
	verify, review := sp.Flows["build"].Step("verify"), sp.Flows["build"].Step("review")
	if verify.Kind != KindJudge || verify.StepMode() != "judge" || verify.Retries != 1 || review.Retries != 2 {
		t.Fatalf("kind %q mode %q retries %d/%d", verify.Kind, verify.StepMode(), verify.Retries, review.Retries)
	}
	j := verify.Judge
	if j.Stakes != StakesCheap || j.Budget == nil || j.Budget.MaxTurns != 3 || j.Budget.MaxWallClockS != 30 || j.Budget.MaxDollars != 0 {
		t.Fatalf("judge %+v budget %+v", j, j.Budget)
	}
	if want := map[string]any{"max_turns": 3, "max_wall_clock_s": 30}; !reflect.DeepEqual(j.Budget.Raw, want) {
		t.Errorf("budget raw %#v", j.Budget.Raw)
	}
	p := j.Predicates[0]
	if p.ID != "p1" || p.Type != PredicateDeterministic || p.AppliedGate != DefaultAppliedGate || p.Expr == nil {
		t.Fatalf("predicate %+v", p)
	}
	if want := map[string]any{"id": "p1", "type": "deterministic", "statement": "file_exists('artifacts/out.txt')"}; !reflect.DeepEqual(p.Raw, want) {
		t.Errorf("raw %#v", p.Raw)
	}
	rj := review.Judge
	if rj.Stakes != StakesParanoid || rj.Predicates[1].AppliedGate != 8 || rj.Predicates[1].Expr != nil || rj.Budget.MaxDollars != 1.5 {
		t.Fatalf("review judge %+v", rj)
	}
	plain, ds := Parse("p.yaml", []byte("version: \"0.2\"\nflows:\n  m:\n    input: {}\n    steps:\n      - id: j\n        judge:\n          predicates: [{id: p, type: judged, statement: s}]\n"), testCompile)
	if plain == nil {
		t.Fatal(ds.Error())
	}
	if j := plain.Flows["m"].Steps[0].Judge; j.Stakes != StakesDefault || j.Budget != nil {
		t.Fatalf("defaults %+v", j)
	}
}
