package tui

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/specs/exprlang"

	"github.com/stratum-go/stratum/engine/enginetest"
	"github.com/stratum-go/stratum/engine/run"
	"github.com/stratum-go/stratum/engine/state"
)

const waitSpec = `version: "0.2"
functions:
  approval:
    mode: gate
flows:
  wait:
    input: {}
    steps:
      - id: prep
        intent: "prepare"
        run: "echo '{}'"
      - id: review
        function: approval
        depends_on: [prep]
        on_approve: ~
        on_revise: prep
        on_kill: ~
`

// TestQuitReleasesRunLease: a run started from the console and left at
// its gate by quitting releases its lease before Run returns, so the flow
// reads stalled at once (not once the lease expires, ~30 s later).
func TestQuitReleasesRunLease(t *testing.T) {
	t.Setenv("STRATUM_HOME", t.TempDir())
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "wait.stratum.yaml"), []byte(waitSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	svc := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: enginetest.New()}
	out := &syncBuffer{}
	inR, inW := io.Pipe()
	defer inW.Close()
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), RunOptions{Source: ServiceSource(svc), SpecDirs: []string{dir}, Keys: DefaultKeyMap(),
			NoColor: true, Reviewer: "alice", Runner: run.Background{Service: svc}, In: inR, Out: out, NoAlt: true})
	}()
	send := func(s string) {
		time.Sleep(300 * time.Millisecond)
		if _, err := io.WriteString(inW, s); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	// The spec is watched, then run from the Specs pane: 6, enter, enter.
	var flow *state.FlowSummary
	for deadline := time.Now().Add(20 * time.Second); flow == nil; {
		if time.Now().After(deadline) {
			t.Fatalf("the run did not reach its gate; screen:\n%s", tail(out.String(), 3000))
		}
		send("6")
		send("\r")
		send("\r")
		for range 20 {
			sums, err := svc.Query().List(ctx, engine.ListFilter{})
			if err != nil {
				t.Fatal(err)
			}
			if len(sums) == 1 && sums[0].Status == state.StatusAwaitingGate {
				flow = &sums[0]
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if flow.Owner == nil || flow.Stalled(time.Now()) {
		t.Fatalf("the run's flow is not driven: %+v", flow)
	}
	// The gate's dialog opened by itself (grace period): close it, quit,
	// confirm.
	time.Sleep(time.Second)
	send("\x1b")
	send("q")
	send("y")
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the console did not quit")
	}
	st, err := svc.Query().Get(ctx, flow.FlowID)
	if err != nil {
		t.Fatal(err)
	}
	sums, _ := svc.Query().List(ctx, engine.ListFilter{})
	if st.Owner != nil || len(sums) != 1 || !sums[0].Stalled(time.Now()) {
		t.Fatalf("after quitting, the flow's lease is %+v (stalled: %v)", st.Owner, len(sums) == 1 && sums[0].Stalled(time.Now()))
	}
}

func tail(s string, n int) string {
	s = ansi.Strip(s)
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
