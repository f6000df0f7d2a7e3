package stratum

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine/internal/llm"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

type address struct {
	Street string  `json:"street" stratum:"minlen=1"`
	Zip    *string `json:"zip"`
}

type kitchenSink struct {
	Label    string            `json:"label" stratum:"enum=positive|negative|neutral"`
	Score    float64           `json:"score" stratum:"min=0,max=1"`
	Count    int               `json:"count,omitempty"` // omitempty: still required
	Summary  string            `json:"summary" stratum:"maxlen=500"`
	Tags     []string          `json:"tags" stratum:"minlen=1"`
	Note     *string           `json:"note"`
	Maybe    *[]int            `json:"maybe"`
	Raw      []byte            `json:"raw"`
	At       time.Time         `json:"at"`
	Home     address           `json:"home"`
	Previous []address         `json:"previous"`
	Extra    map[string]string `json:"extra"`
	Secret   string            `json:"secret" stratum:"opaque"`
	Level    *int              `json:"level" stratum:"enum=1|2|3"`
	skipped  int
	Ignored  string `json:"-"`
}

// Rule 2: the schema of Go types, and its strict projection as `stratum
// run` sends it, against golden files.
func TestSchemaGoldens(t *testing.T) {
	cases := map[string]func() (map[string]any, error){
		"kitchen_sink": SchemaFor[kitchenSink],
		"sentiment":    SchemaFor[sentiment],
		"string":       SchemaFor[string],
		"list":         SchemaFor[[]address],
	}
	for name, schemaOf := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := schemaOf()
			if err != nil {
				t.Fatal(err)
			}
			root, _ := llm.ObjectRoot(s)
			strict, ok := llm.StrictSchema(root)
			golden(t, name+".json", s)
			golden(t, name+".strict.json", map[string]any{"strict": ok, "schema": strict})
		})
	}
}

func golden(t *testing.T, name string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "schema", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n%s", name, got)
	}
}

// Rule 2: the rules the golden files show, stated.
func TestSchemaRules(t *testing.T) {
	s, err := SchemaFor[kitchenSink]()
	if err != nil {
		t.Fatal(err)
	}
	props := s["properties"].(map[string]any)
	req := map[string]bool{}
	for _, r := range s["required"].([]any) {
		req[r.(string)] = true
	}
	for _, name := range []string{"label", "score", "count", "tags", "raw", "at", "home", "previous", "extra", "secret"} {
		if !req[name] {
			t.Errorf("%s not required", name)
		}
	}
	for _, name := range []string{"note", "maybe", "level"} {
		if req[name] {
			t.Errorf("%s (a pointer) required", name)
		}
	}
	if s["additionalProperties"] != false {
		t.Errorf("object open: %v", s["additionalProperties"])
	}
	if tags := props["tags"].(map[string]any); tags["type"] != "array" || tags["minItems"] != 1.0 {
		t.Errorf("tags %v", tags)
	}
	if raw := props["raw"].(map[string]any); raw["type"] != "string" || raw["contentEncoding"] != "base64" {
		t.Errorf("raw %v", raw)
	}
	if at := props["at"].(map[string]any); at["format"] != "date-time" {
		t.Errorf("at %v", at)
	}
	if _, ok := props["skipped"]; ok {
		t.Error("unexported field in the schema")
	}
	if _, ok := props["Ignored"]; ok {
		t.Error(`json:"-" field in the schema`)
	}
	type badEnum struct {
		On bool `json:"on" stratum:"enum=yes|no"`
	}
	if _, err := SchemaFor[badEnum](); !errors.As(err, new(*CompileError)) {
		t.Errorf("bad enum: %v", err)
	}
	if _, err := SchemaFor[chan int](); !errors.As(err, new(*CompileError)) {
		t.Errorf("chan: %v", err)
	}
}

// Outputs decode the JSON the schema describes, round trip included.
func TestSchemaAnswersDecode(t *testing.T) {
	fake := newFake(t, `{"label":"neutral","score":0.5,"count":0,"summary":"s","tags":["a"],"note":null,"maybe":null,"raw":"aGk=","at":"2026-01-02T03:04:05Z","home":{"street":"x","zip":null},"previous":[],"extra":{},"secret":"s","level":2}`)
	_, ctx := fake.runtime(t, Options{})
	out, err := MustInfer("sink", Spec[string, kitchenSink]{Intent: "Fill"}).Call(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	if string(out.Raw) != "hi" || out.At.Year() != 2026 || out.Level == nil || *out.Level != 2 || out.Note != nil {
		t.Fatalf("%+v", out)
	}
}
