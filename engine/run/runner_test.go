package run

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

func TestHelloExample(t *testing.T) {
	e := newEnv(t)
	src, err := os.ReadFile(filepath.Join("..", "..", "specs", "examples", "hello.stratum.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", t.TempDir())
	sp := e.spec(string(src))
	o := e.start(sp, "hello", map[string]any{"name": "world"}, func(o *Options) { o.Gates.Approve = []string{"all"} })
	wantStatus(t, o, EndComplete, 0)
	st := e.state(o.FlowID)
	if st.Attempts["flaky"] != 2 {
		t.Errorf("flaky attempts %d", st.Attempts["flaky"])
	}
	t.Log(e.log.String())
	_ = context.Background()
}
