package judge

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine/internal/judge/judgetest"
	"github.com/stratum-go/stratum/specs"
	"github.com/stratum-go/stratum/specs/exprlang"
)

// BenchmarkTier1 is one judge turn as stratum_judge answers it: 1,000
// deterministic predicates (each reads one artifact and looks for one
// modified file) over 10,000 staged files (5,000 artifacts and 5,000
// modified files read from a workspace): staging with its manifest, then
// tier 1. The bar is under 1 s on 2 cores. tier1-ms/op is the part
// after staging (the JudgeResult's wall_clock_s).
func BenchmarkTier1(b *testing.B) {
	ws := b.TempDir()
	w := judgetest.Write(b, ws)
	sp, ds := specs.Parse("b.yaml", []byte(w.Spec), exprlang.Compile)
	if sp == nil {
		b.Fatal(ds.Error())
	}
	ps := sp.Flows["f"].Steps[0].Judge.Predicates
	root := b.TempDir()
	tier1 := 0.0
	n := 0
	for ; b.Loop(); n++ {
		r, err := Run(context.Background(), Request{FlowID: "f", StepID: fmt.Sprintf("s%d", n), Predicates: ps, Stakes: "cheap",
			Artifacts: w.Artifacts, Modified: w.Modified, Workspace: ws, Root: root, Now: time.Now})
		if err != nil || !r.Met {
			b.Fatalf("%v %v", err, r != nil && r.Met)
		}
		tier1 += r.Consumed.WallClockS
	}
	b.ReportMetric(tier1*1000/float64(n), "tier1-ms/op")
}

// BenchmarkManifestJSON writes a 10,000-row manifest (BenchmarkTier1's)
// the way staging does and with encoding/json, whose bytes it matches.
func BenchmarkManifestJSON(b *testing.B) {
	es := make([]ManifestEntry, 10000)
	for i := range es {
		es[i] = entry(bucketModified, fmt.Sprintf("src/d%d/f%d.go", i%50, i), []byte(fmt.Sprint(i)), 1_800_000_000_000)
	}
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			_ = manifestJSON(es)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			_, _ = json.MarshalIndent(es, "", "  ")
		}
	})
}
