package run

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/specs"
)

// A 200 KB string input (over Linux's 128 KiB bound on one variable) ran
// the command into "fork/exec /usr/bin/sh: argument list too long". It goes
// to a file named by STRATUM_INPUT_<NAME>_FILE, byte-exact, and the file is
// gone when the attempt ends; small inputs stay variables.
func TestCommandLargeInputGoesToAFile(t *testing.T) {
	tmp := t.TempDir()
	big := strings.Repeat("0123456789", 20_000)
	// The command reports what it sees: whether STRATUM_INPUT_BIG is set,
	// the file's size and checksum, the small input, and the file's path.
	cmd := &specs.Command{Shell: `printf '{"set": "%s", "size": %s, "sum": "%s", "small": "%s", "path": "%s"}' ` +
		`"${STRATUM_INPUT_BIG+yes}" "$(wc -c < "$STRATUM_INPUT_BIG_FILE")" "$(cksum < "$STRATUM_INPUT_BIG_FILE")" "$STRATUM_INPUT_SMALL" "$STRATUM_INPUT_BIG_FILE"`}
	req := cmdReq(t, cmd, map[string]any{"big": big, "small": "hi"})
	out, err := (&CommandExecutor{TempDir: tmp}).Execute(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	got := out.Output.(map[string]any)
	if got["set"] != "" || got["size"] != float64(len(big)) || got["small"] != "hi" {
		t.Fatalf("the command saw %v", got)
	}
	if !strings.HasPrefix(got["path"].(string), tmp) {
		t.Fatalf("file %v outside TempDir %s", got["path"], tmp)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Fatalf("left behind in TempDir: %v", left)
	}
}

// A revise rationale of 200,000 bytes (stratum gate revise --note) failed
// the revised step ("argument list too long") and left a flow that could
// not be resumed. The worker gets the feedback from
// STRATUM_REVISE_FEEDBACK_FILE and the resumed flow completes.
func TestReviseLargeRationaleReachesTheWorker(t *testing.T) {
	e := newEnv(t)
	t.Setenv("TMPDIR", t.TempDir())
	rationale := strings.Repeat("r", 200_000)
	src := strings.Replace(gateSpec(""),
		`printf '%s\\n' \"$STRATUM_REVISE_FEEDBACK\" >> feedback.log`,
		`if [ -n \"$STRATUM_REVISE_FEEDBACK_FILE\" ]; then cat \"$STRATUM_REVISE_FEEDBACK_FILE\" > feedback.json; fi`, 1)
	sp := e.spec(src)
	o := e.start(sp, "main", nil)
	wantStatus(t, o, EndGate, 4)
	decide := func(outcome review.Outcome, note string) {
		t.Helper()
		if resp, err := e.svc.GateResolve(context.Background(), o.FlowID, review.Decision{StepID: "review", Outcome: outcome,
			Rationale: note, ResolvedBy: review.Human, Channel: review.ChannelCLI}); err != nil {
			t.Fatalf("resolve: %v %v", resp, err)
		}
	}
	decide(review.Revise, rationale)
	o, err := e.runner().Resume(context.Background(), o.FlowID)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, o, EndGate, 4) // the revised step ran; the gate opened again
	decide(review.Approve, "fine")
	if o, err = e.runner().Resume(context.Background(), o.FlowID); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, o, EndComplete, 0)
	if e.count("work.count") != 2 {
		t.Fatalf("work ran %d times", e.count("work.count"))
	}
	b, err := os.ReadFile(filepath.Join(e.dir, "feedback.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got engine.ReviseFeedback
	if err := json.Unmarshal(b, &got); err != nil || got.Rationale != rationale || got.Gate != "review" {
		t.Fatalf("feedback (%d bytes): %v", len(b), err)
	}
	if left, _ := filepath.Glob(filepath.Join(os.TempDir(), "stratum-env-*")); len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}
}

// A command that exits successfully after starting a background process
// that keeps stdout open (`sleep 4 & echo …`) passes on the JSON it printed;
// it failed with "WaitDelay expired before I/O complete".
func TestCommandBackgroundChildKeepsStdout(t *testing.T) {
	req := cmdReq(t, &specs.Command{Shell: `sleep 4 & echo '{"ok": true}'`}, nil)
	out, err := (&CommandExecutor{}).Execute(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := out.Output.(map[string]any); m["ok"] != true {
		t.Fatalf("output %v", out.Output)
	}
	// A failing command with such a child still fails with its status.
	req = cmdReq(t, &specs.Command{Shell: `sleep 4 & exit 3`}, nil)
	if _, err := (&CommandExecutor{}).Execute(context.Background(), req); err == nil || !strings.Contains(err.Error(), "status 3") {
		t.Fatalf("err %v, want status 3", err)
	}
}
