package state

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"
	"time"
)

// fillValue sets every field reachable from v to a non-zero value: maps and
// slices get one element, pointers a target, interfaces a nested JSON
// object, so a field Clone forgets to copy shows up as shared memory.
func fillValue(v reflect.Value, depth int) {
	if depth > 6 {
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Int, reflect.Int64:
		v.SetInt(1)
	case reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fillValue(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k := reflect.New(v.Type().Key()).Elem()
		fillValue(k, depth+1)
		e := reflect.New(v.Type().Elem()).Elem()
		fillValue(e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Slice:
		if v.Type() == reflect.TypeOf(json.RawMessage(nil)) {
			v.SetBytes([]byte(`{"a":[1]}`))
			return
		}
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fillValue(s.Index(0), depth+1)
		v.Set(s)
	case reflect.Interface:
		v.Set(reflect.ValueOf(map[string]any{"k": []any{"v", map[string]any{"n": 1.0}}}))
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Field(i).CanSet() {
				fillValue(v.Field(i), depth+1)
			}
		}
	}
}

// refs collects the addresses of every map, slice backing array and pointer
// target reachable from v.
func refs(v reflect.Value, into map[uintptr]string, path string) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		into[v.Pointer()] = path
		refs(v.Elem(), into, path+"*")
	case reflect.Map:
		if v.IsNil() {
			return
		}
		into[v.Pointer()] = path
		it := v.MapRange()
		for it.Next() {
			refs(it.Value(), into, path+"["+it.Key().String()+"]")
		}
	case reflect.Slice:
		if v.IsNil() || v.Len() == 0 {
			return
		}
		into[v.Pointer()] = path
		for i := 0; i < v.Len(); i++ {
			refs(v.Index(i), into, path+"[]")
		}
	case reflect.Interface:
		if !v.IsNil() {
			refs(v.Elem(), into, path)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			refs(v.Field(i), into, path+"."+v.Type().Field(i).Name)
		}
	}
}

func TestCloneSharesNothing(t *testing.T) {
	var st FlowState
	fillValue(reflect.ValueOf(&st).Elem(), 0)
	c := st.Clone()
	a, _ := json.Marshal(&st)
	b, _ := json.Marshal(c)
	if string(a) != string(b) {
		t.Fatalf("clone differs:\n%s\n%s", a, b)
	}
	orig, copied := map[uintptr]string{}, map[uintptr]string{}
	refs(reflect.ValueOf(&st).Elem(), orig, "st")
	refs(reflect.ValueOf(c).Elem(), copied, "clone")
	for p, path := range copied {
		if o, ok := orig[p]; ok {
			t.Errorf("%s shares memory with %s", path, o)
		}
	}
}

func TestCloneValueOfGoTypes(t *testing.T) {
	type inner struct{ L []string }
	v := map[string]any{"list": []string{"a"}, "m": map[string]int{"k": 1}, "p": &inner{L: []string{"x"}}}
	c := CloneValue(v).(map[string]any)
	c["list"].([]string)[0] = "changed"
	c["m"].(map[string]int)["k"] = 2
	c["p"].(*inner).L[0] = "changed"
	if v["list"].([]string)[0] != "a" || v["m"].(map[string]int)["k"] != 1 || v["p"].(*inner).L[0] != "x" {
		t.Fatalf("CloneValue shared memory: %#v", v)
	}
}

func BenchmarkClone(b *testing.B) {
	var st FlowState
	fillValue(reflect.ValueOf(&st).Elem(), 0)
	raw, _ := json.Marshal(&st)
	b.Run("clone", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			_ = st.Clone()
		}
	})
	b.Run("json-decode", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			var s FlowState
			_ = json.Unmarshal(raw, &s)
		}
	})
	// The same state whatever the types' layout (fillValue's depth limit
	// sees embedded structs as a level): the record stored by be2c848.
	stored, err := os.ReadFile(storedStateBe2c848)
	if err != nil {
		b.Fatal(err)
	}
	var fixed FlowState
	if err := json.Unmarshal(stored, &fixed); err != nil {
		b.Fatal(err)
	}
	b.Run("clone-stored", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = fixed.Clone()
		}
	})
}
