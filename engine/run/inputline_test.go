package run

import (
	"reflect"
	"testing"
)

func TestParseInputLine(t *testing.T) {
	tests := []struct {
		in      string
		want    map[string]any
		wantErr bool
	}{
		{"", map[string]any{}, false},
		{"count=3", map[string]any{"count": float64(3)}, false},
		{`name="a b" tags=["x", "y"] ok=true`, map[string]any{"name": "a b", "tags": []any{"x", "y"}, "ok": true}, false},
		{"word=plain  obj={\"k\": 1}", map[string]any{"word": "plain", "obj": map[string]any{"k": float64(1)}}, false},
		{`quote="say \"hi there\""`, map[string]any{"quote": `say "hi there"`}, false},
		{"novalue", nil, true},
		{"=3", nil, true},
	}
	for _, tt := range tests {
		got, err := ParseInputLine(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("%q: err %v", tt.in, err)
			continue
		}
		if !tt.wantErr && !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: got %#v, want %#v", tt.in, got, tt.want)
		}
	}
}
