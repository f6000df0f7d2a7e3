package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/enginetest"
	"github.com/stratum-go/stratum/specs/exprlang"
)

// TestServiceWithoutParserRefusesSpecs: a Service without ParseSpec (a Go
// program's, which links no spec parser) refuses every spec, with
// or without expressions, saying why; it does not parse half of them.
func TestServiceWithoutParserRefusesSpecs(t *testing.T) {
	const plain = "version: \"0.2\"\nflows:\n  main:\n    input: {}\n    steps:\n      - {id: a, intent: x}\n"
	const withExpr = "version: \"0.2\"\nflows:\n  main:\n    input: {}\n    steps:\n      - {id: a, intent: x, ensure: [\"result.ok\"]}\n"
	for _, src := range []string{plain, withExpr} {
		s := &engine.Service{Store: enginetest.New()}
		_, err := s.Plan(context.Background(), src, "main", nil, engine.PlanOptions{})
		e := engine.AsError(err)
		if e == nil || !strings.Contains(e.Message, "no spec parser (Service.ParseSpec)") {
			t.Errorf("Plan without a parser = %v, want the refusal naming Service.ParseSpec", err)
		}
		s.ParseSpec = exprlang.ParseSpec
		if out, err := s.Plan(context.Background(), src, "main", nil, engine.PlanOptions{}); err != nil || engine.FlowIDOf(out) == "" {
			t.Errorf("Plan with exprlang.ParseSpec = %v, %v", out, err)
		}
	}
}
