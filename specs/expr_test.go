package specs

import (
	"testing"
)

func TestExprSmoke(t *testing.T) {
	for _, src := range []string{
		"result.confidence > 0.7",
		"result.status in ('success', 'partial')",
		"len(result.items) > 0 and result.label != ''",
		"not result.items",
		"result.missing",
		"result.a.b == None",
		"not result.confidence == 3",
		"result.x is not None",
		"str(result.confidence) + '!'",
	} {
		e, err := CompileExpr(ExprEnsure, src)
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		v, err := e.Eval(EvalEnv{Result: map[string]any{"confidence": 0.9, "status": "partial", "items": []any{1}, "label": "x", "a": map[string]any{"b": nil}, "x": 1}})
		t.Logf("%s => %#v %v paths=%v", src, v, err, e.ResultPaths())
	}
}
