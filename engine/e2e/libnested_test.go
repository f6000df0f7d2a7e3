package e2e

import (
	"context"
	"os"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/stratum-go/stratum/engine/stratum"
	"github.com/stratum-go/stratum/store/shared"
)

// answerModel is a Model that answers every request with one JSON text.
type answerModel string

func (m answerModel) Generate(context.Context, *stratum.ModelRequest) (*stratum.ModelResponse, error) {
	return &stratum.ModelResponse{Message: stratum.Message{Role: stratum.RoleAssistant, Parts: []stratum.Part{{Text: string(m)}}},
		Usage: stratum.Usage{InputTokens: 10, OutputTokens: 5}, FinishReason: "stop"}, nil
}

type noteIn struct {
	Text string `json:"text"`
}

type noteOut struct {
	Label string `json:"label"`
}

// libnested runs a Go program's flows as a program does: a Flow.Run
// ("outer") whose function runs another Flow.Run ("inner") that makes one
// Call, persisted in the script's store (store/shared, as
// shared.OpenDefault would open it). It writes the two flow ids to the
// files outer and inner.
func libnested(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: libnested")
	}
	ctx := context.Background()
	st, err := shared.Open(ctx, shared.Settings{Home: ts.Getenv("STRATUM_HOME"), Store: ts.Getenv("STRATUM_STORE")})
	ts.Check(err)
	defer st.Close()
	rt, err := stratum.New(stratum.Options{Store: st, Model: "double/v1", Getenv: func(string) string { return "" },
		Models: map[string]stratum.Model{"double/v1": answerModel(`{"label":"ok"}`)}})
	ts.Check(err)
	defer rt.Close(ctx)
	label := stratum.MustInfer("label", stratum.Spec[noteIn, noteOut]{Intent: "Label the note"})
	inner := stratum.NewFlow("inner", stratum.Budget{}, func(ctx context.Context, in noteIn) (string, error) {
		_, err := label.Call(ctx, in)
		return stratum.FlowID(ctx), err
	})
	var innerID string
	outer := stratum.NewFlow("outer", stratum.Budget{}, func(ctx context.Context, in noteIn) (string, error) {
		var err error
		innerID, err = inner.Run(ctx, in)
		return stratum.FlowID(ctx), err
	})
	outerID, err := outer.Run(stratum.WithRuntime(ctx, rt), noteIn{Text: "hello"})
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs("outer"), []byte(outerID), 0o644))
	ts.Check(os.WriteFile(ts.MkAbs("inner"), []byte(innerID), 0o644))
}
