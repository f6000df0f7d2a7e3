package py

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"testing"
)

func TestNormalize(t *testing.T) {
	in := map[string]any{
		"count": 4.0, "ratio": 0.25, "n": json.Number("12"), "f": json.Number("1.0"),
		"list": []int64{1, 2}, "m": map[string]uint8{"k": 3}, "p": (*int)(nil),
	}
	want := map[string]any{
		"count": 4, "ratio": 0.25, "n": 12, "f": 1.0,
		"list": []any{1, 2}, "m": map[string]any{"k": 3}, "p": nil,
	}
	got, err := Normalize(in)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Normalize = %#v, %v", got, err)
	}
	if in["count"] != 4.0 {
		t.Fatal("Normalize modified its argument")
	}
	var deep any = 1
	for range maxDepth + 1 {
		deep = []any{deep}
	}
	if _, err := Normalize(deep); err != errTooDeep {
		t.Fatalf("deep: %v", err)
	}
	// AsValue does not look inside containers, and keeps what it cannot
	// normalise.
	l := []any{4.0}
	if got := AsValue(l); !reflect.DeepEqual(got, l) {
		t.Fatalf("AsValue(%v) = %v", l, got)
	}
	if got := AsValue(int32(7)); got != 7 {
		t.Fatalf("AsValue(int32) = %#v", got)
	}
}

func TestSemantics(t *testing.T) {
	var w Work
	for _, v := range []any{nil, false, 0, 0.0, "", []any{}, map[string]any{}} {
		if Truth(v) {
			t.Errorf("Truth(%#v) = true", v)
		}
	}
	if ok, err := Compare(&w, "==", []any{1, 2.0}, []any{1.0, 2}); !ok || err != nil {
		t.Errorf("[1, 2.0] == [1.0, 2]: %v, %v", ok, err)
	}
	if ok, err := CompareChain(&w, []string{"<=", "<"}, []any{0, 0.5, 1}); !ok || err != nil {
		t.Errorf("0 <= 0.5 < 1: %v, %v", ok, err)
	}
	if _, err := Compare(&w, ">", 1, "a"); err == nil || err.Error() != "'>' not supported between instances of 'int' and 'str'" {
		t.Errorf("1 > 'a': %v", err)
	}
	if v, err := Arith(&w, "%", -7, 3); v != 2 || err != nil {
		t.Errorf("-7 %% 3 = %v, %v", v, err)
	}
	if _, err := Arith(&w, "*", math.MaxInt, 2); err != errIntOverflow {
		t.Errorf("overflow: %v", err)
	}
	if v, err := Unary("-", true); v != -1 || err != nil {
		t.Errorf("-True = %v, %v", v, err)
	}
	if ok, err := In(&w, "k", map[string]any{"k": 1}); !ok || err != nil {
		t.Errorf("'k' in {'k': 1}: %v, %v", ok, err)
	}
	if v, err := Get(&w, []any{"a", "b"}, -1, "result.items"); v != "b" || err != nil {
		t.Errorf("items[-1] = %v, %v", v, err)
	}
	if _, err := Get(&w, map[string]any{}, "x", "result"); err == nil || err.Error() != "result has no field 'x'" {
		t.Errorf("missing key: %v", err)
	}
	if v, err := Slice(&w, "héllo", 1, nil, "s"); v != "éllo" || err != nil {
		t.Errorf("'héllo'[1:] = %v, %v", v, err)
	}
	if v, err := CallMethod(&w, " A ", "strip", "s", nil); v != "A" || err != nil {
		t.Errorf("strip: %v, %v", v, err)
	}
	if _, err := CallMethod(&w, 1, "lower", "result.n", nil); err == nil || err.Error() != "result.n is a int, which has no method lower()" {
		t.Errorf("int.lower(): %v", err)
	}
	var pe *Error
	if _, err := CallMethod(&w, "s", "split", "s", []any{"a", "b"}); !errors.As(err, &pe) || err.Error() != "split() takes at most 1 argument (2 given)" {
		t.Errorf("split arity: %v", err)
	}
}

func TestWorkBudget(t *testing.T) {
	var w Work
	if err := w.Spend(workBudget); err != nil {
		t.Fatal(err)
	}
	if err := w.Spend(1); err != errTooExpensive {
		t.Fatalf("over budget: %v", err)
	}
	var unbounded *Work
	if err := unbounded.Spend(workBudget * 2); err != nil {
		t.Fatalf("nil Work: %v", err)
	}
	big := make([]any, 1000)
	if _, err := Arith(&w, "*", big, 1000); err != errTooExpensive {
		t.Fatalf("repetition on an exhausted budget: %v", err)
	}
}

func TestBuiltins(t *testing.T) {
	names := BuiltinNames()
	want := []string{"all", "any", "bool", "file_contains", "file_exists", "float", "int", "len", "max", "min", "no_file_conflicts", "plan_completion", "str", "vocabulary_compliance"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("BuiltinNames = %q", names)
	}
	for _, n := range names {
		b, ok := LookupBuiltin(n)
		if !ok || b.Call == nil || (b.Max >= 0 && b.Max < b.Min) {
			t.Errorf("%s: %+v", n, b)
		}
		if b.Root != (n == "file_exists" || n == "file_contains" || n == "vocabulary_compliance") {
			t.Errorf("%s: Root = %v", n, b.Root)
		}
	}
	var w Work
	s, _ := LookupBuiltin("str")
	if v, err := s.Call(&w, []any{[]any{"a", 1.5, nil}}); v != "['a', 1.5, None]" || err != nil {
		t.Errorf("str([...]) = %v, %v", v, err)
	}
	fe, _ := LookupBuiltin("file_exists")
	if v, err := fe.Call(&w, []any{"../x", t.TempDir()}); v != false || err != nil {
		t.Errorf("file_exists outside the root = %v, %v", v, err)
	}
	if ArityText(1, 1, 2) != "takes exactly 1 argument (2 given)" || ArityText(1, -1, 0) != "takes at least 1 argument (0 given)" {
		t.Error("ArityText")
	}
}
