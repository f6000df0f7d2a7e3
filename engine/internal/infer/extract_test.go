package infer

import (
	"reflect"
	"testing"
)

func TestExtractJSON(t *testing.T) {
	cases := []struct {
		in       string
		want     any
		repaired bool
		err      bool
	}{
		{`{"a":1}`, map[string]any{"a": 1.0}, false, false},
		{"  [1,2]\n", []any{1.0, 2.0}, false, false},
		{"```json\n{\"a\": \"x\"}\n```", map[string]any{"a": "x"}, true, false},
		{"Here you go:\n```\n{\"a\": 2}\n```\nAnything else?", map[string]any{"a": 2.0}, true, false},
		{`The answer is {"a": {"b": "}"}} as requested.`, map[string]any{"a": map[string]any{"b": "}"}}, true, false},
		{`{"a": [1, 2,], }`, map[string]any{"a": []any{1.0, 2.0}}, true, false},
		{`{"s": "a, }"}`, map[string]any{"s": "a, }"}, false, false},
		{"", nil, false, true},
		{"positive", nil, false, true},
		{`{"a": `, nil, false, true},
	}
	for _, tc := range cases {
		got, repaired, err := ExtractJSON(tc.in)
		if (err != nil) != tc.err || repaired != tc.repaired || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ExtractJSON(%q) = %v, %v, %v; want %v, %v, err=%v", tc.in, got, repaired, err, tc.want, tc.repaired, tc.err)
		}
	}
}

func FuzzExtractJSON(f *testing.F) {
	for _, s := range []string{`{"a":1}`, "```json\n[1]\n```", `x {"a": [1,}`, `"\`, `{{{{`, "```"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ExtractJSON(s) // must not panic
	})
}

func TestPromptHashStability(t *testing.T) {
	in := func(doc string) []Binding {
		return []Binding{{Name: "m", Value: map[string]any{"z": 1, "a": 2, "k": []any{"x", map[string]any{"q": 1, "b": 2}}}},
			{Name: "doc", Value: doc, Opaque: true}}
	}
	a, _ := Compile("Do it", nil, in("one"), nil)
	for i := 0; i < 50; i++ {
		b, _ := Compile("Do it", nil, in("one"), nil)
		if b.Hash != a.Hash || b.Text != a.Text {
			t.Fatalf("unstable prompt: %q vs %q", a.Text, b.Text)
		}
	}
	// The hash covers the instruction text only: opaque data is attached.
	c, _ := Compile("Do it", nil, in("two"), nil)
	if c.Hash != a.Hash {
		t.Fatal("opaque values must not change the compiled-prompt hash")
	}
	d, _ := Compile("Do it now", nil, in("one"), nil)
	if d.Hash == a.Hash {
		t.Fatal("a different intent must change the hash")
	}
}
