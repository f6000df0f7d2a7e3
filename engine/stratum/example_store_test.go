package stratum_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/stratum-go/stratum/engine/stratum"
	"github.com/stratum-go/stratum/store/shared"
)

// A program that wants its flows, calls and reviews in `stratum tui`,
// `stratum query` and `stratum gate` opens the shared store — the one the
// stratum commands of the same directory and environment open, a bbolt
// file by default — and passes it as Options.Store. That links no etcd
// client; team mode (an etcd:// store) is one more import:
//
//	import _ "github.com/stratum-go/stratum/store/team"
func ExampleStore() {
	ctx := context.Background()
	st, err := shared.OpenDefault(ctx) // $STRATUM_HOME/stratum.db unless STRATUM_STORE or store: say otherwise
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close() // the Runtime does not close it
	rt, err := stratum.New(stratum.Options{Store: st,
		Model:  "mine/canned",
		Models: map[string]stratum.Model{"mine/canned": cannedModel{answer: `{"label":"positive","confidence":0.9,"reasoning":"praise"}`}},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close(ctx)

	triage := stratum.NewFlow("triage", stratum.Budget{}, func(ctx context.Context, f Feedback) (string, error) {
		s, err := classify.Call(ctx, f) // a trace entry of the stored flow
		return s.Label, err
	})
	label, err := triage.Run(stratum.WithRuntime(ctx, rt), Feedback{Text: "Works like a charm."})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(label, "— stored in", strings.Fields(st.Name())[0])
	// Output:
	// positive — stored in bbolt
}
