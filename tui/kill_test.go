package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/state"
)

// TestKillStalledLibraryFlow: a Go program's flow whose program died (its
// lease expired: the flow reads stalled, its review still open) is ended
// from the console with :kill REASON and a confirmation: killed, its
// review withdrawn, recorded with the console's reviewer, the reason and
// channel tui. Before, nothing in the console (or anywhere) could end it.
func TestKillStalledLibraryFlow(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	lease := state.Lease{ID: "lib-dead", PID: 4242, ExpiresAt: base.Add(time.Minute)}
	id, err := engine.NewLibrary(f.svc).StartFlow(ctx, engine.LibraryFlowOptions{Name: "announce", Owner: &lease})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engine.NewLibrary(f.svc).OpenReview(ctx, id, engine.ReviewRequest{Question: "Publish?", Schema: map[string]any{"type": "boolean"}}); err != nil {
		t.Fatal(err)
	}
	later := func() time.Time { return base.Add(10 * time.Minute) }
	f.svc.Now, f.store.Now = later, later

	m := newModel(t, f.src, 100, 30)
	if got := m.focusFlowID(); got != id {
		t.Fatalf("selected %s, want the program's flow %s", got, id)
	}
	if v := m.View(); !strings.Contains(v, "stalled") || !strings.Contains(v, ":kill REASON") {
		t.Fatalf("the stalled flow does not say how to end it:\n%s", v)
	}
	press(m, ":")
	typeText(m, "kill the program was kill -9ed")
	press(m, "enter")
	v := m.View()
	if !strings.Contains(v, "End flow announce") || !strings.Contains(v, "stalled") || !strings.Contains(v, "killed by alice: the program was kill -9ed") {
		t.Fatalf("no confirmation:\n%s", v)
	}
	press(m, "y")
	if !strings.Contains(m.statusLine(), "ended flow "+shortID(id)+" as killed") {
		t.Fatalf("status %q", m.statusLine())
	}
	st, err := f.svc.Query().Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != state.StatusKilled || st.Ended == nil || st.Ended.By != "alice" || st.Ended.Channel != "tui" ||
		st.Ended.Reason != "the program was kill -9ed" || !st.Ended.Stalled || st.Library.Review("review-1").Status != state.ReviewWithdrawn {
		t.Fatalf("after :kill: %s %+v review %s", st.Status, st.Ended, st.Library.Review("review-1").Status)
	}

	// A flow a live process drives is refused, and says so.
	live := state.Lease{ID: "lib-live", ExpiresAt: base.Add(time.Hour)}
	id2, err := engine.NewLibrary(f.svc).StartFlow(ctx, engine.LibraryFlowOptions{Name: "running", Owner: &live})
	if err != nil {
		t.Fatal(err)
	}
	drive(m, m.reloadCmd())
	press(m, "g") // the newest flow, at the top
	if m.focusFlowID() != id2 {
		t.Fatalf("selected %s, want %s", m.focusFlowID(), id2)
	}
	press(m, ":")
	typeText(m, "kill nope")
	press(m, "enter", "y")
	if !strings.Contains(m.statusLine(), "flow_owned") {
		t.Fatalf("status %q", m.statusLine())
	}
	if st, _ := f.svc.Query().Get(ctx, id2); st.Status != state.StatusRunning {
		t.Fatalf("a live flow was ended: %s", st.Status)
	}
}
