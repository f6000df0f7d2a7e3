package engine

import (
	"testing"

	"github.com/stratum-go/stratum/specs/exprlang"
)

// TestParseCacheKeepsFailures: a spec that does not parse is parsed once
// per file and text, like a valid one (100,000 stored flows of one broken
// spec cost one parse); its diagnostics keep naming its file.
func TestParseCacheKeepsFailures(t *testing.T) {
	s := &Service{ParseSpec: exprlang.ParseSpec}
	const bad = "version: \"0.2\"\nflows:\n  main:\n    steps: []\n"
	sp1, ds1 := s.parse("a.stratum.yaml", bad)
	sp2, ds2 := s.parse("a.stratum.yaml", bad)
	if sp1 != nil || sp2 != nil || len(ds1) == 0 || len(ds2) != len(ds1) {
		t.Fatalf("parse = %v %v / %v %v", sp1, ds1, sp2, ds2)
	}
	if &ds1[0] != &ds2[0] {
		t.Error("the second parse of the same broken spec was not answered from the cache")
	}
	_, ds3 := s.parse("b.stratum.yaml", bad)
	if &ds3[0] == &ds1[0] || ds3[0].File != "b.stratum.yaml" {
		t.Errorf("another file got the first file's diagnostics: %v", ds3[0])
	}
	const good = "version: \"0.2\"\nflows:\n  main:\n    input: {}\n    steps:\n      - {id: a, intent: x}\n"
	g1, _ := s.parse("a.stratum.yaml", good)
	g2, _ := s.parse("c.stratum.yaml", good)
	if g1 == nil || g1 != g2 {
		t.Errorf("a valid spec is parsed once per text: %p %p", g1, g2)
	}
}
