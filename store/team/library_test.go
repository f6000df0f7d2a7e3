package team_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/stratum"
	"github.com/stratum-go/stratum/specs/exprlang"
	"github.com/stratum-go/stratum/store/etcdstore/etcdtest"
	"github.com/stratum-go/stratum/store/shared"
)

type answer string

func (a answer) Generate(context.Context, *stratum.ModelRequest) (*stratum.ModelResponse, error) {
	return &stratum.ModelResponse{Message: stratum.Message{Role: stratum.RoleAssistant, Parts: []stratum.Part{{Text: string(a)}}}}, nil
}

type in struct {
	Text string `json:"text"`
}

type out struct {
	Label string `json:"label"`
}

// Team mode is one import (this test binary links store/team): a Go
// program's OpenDefault of STRATUM_STORE=etcd://… opens the cluster, and
// the program's flow and call are stored there, where every machine's
// `stratum tui` reads them.
func TestTeamModeIsOneImport(t *testing.T) {
	c := etcdtest.Start(t, 1)
	t.Setenv("STRATUM_HOME", t.TempDir())
	t.Chdir(t.TempDir())
	t.Setenv("STRATUM_STORE", c.URL("lib"))
	ctx := context.Background()
	st, err := shared.OpenDefault(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if !strings.HasPrefix(st.Name(), "etcd etcd://") {
		t.Fatalf("opened %s", st.Name())
	}
	rt, err := stratum.New(stratum.Options{Store: st, Model: "double/v1", Getenv: func(string) string { return "" },
		Models: map[string]stratum.Model{"double/v1": answer(`{"label":"ok"}`)}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	label := stratum.MustInfer("label", stratum.Spec[in, out]{Intent: "Label it"})
	id, err := stratum.NewFlow("team", stratum.Budget{}, func(ctx context.Context, x in) (string, error) {
		_, err := label.Call(ctx, x)
		return stratum.FlowID(ctx), err
	}).Run(stratum.WithRuntime(ctx, rt), in{Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	fs, err := (&engine.Service{ParseSpec: exprlang.ParseSpec, Store: st}).Query().Get(ctx, id)
	if err != nil || fs.FlowName != "team" || fs.Driver != "library" || len(fs.Trace) == 0 {
		t.Fatalf("flow %s in the cluster: %+v, %v", id, fs, err)
	}
}
