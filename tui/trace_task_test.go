package tui

import (
	"testing"

	"github.com/stratum-go/stratum/engine"
)

func TestTaskRowText(t *testing.T) {
	ev := engine.Event{Type: engine.EventParallelTask, StepID: "fan", Data: map[string]any{
		"task_id": "b", "state": "failed", "runs": 2, "duration_ms": int64(1500), "branch": "stratum/1234/fan/b",
		"violations": []string{"task 'b': command exited with status 1"}}}
	d, ok := ev.TaskDetail()
	if !ok {
		t.Fatal("not a task event")
	}
	text, detail := taskText(ev.StepID, d)
	if want := "⇉ fan task b failed (run 2) 1.5s stratum/1234/fan/b"; text != want {
		t.Fatalf("row %q, want %q", text, want)
	}
	if detail != "task 'b': command exited with status 1" {
		t.Fatalf("detail %q", detail)
	}
	// Read back from the log (JSON numbers) the same way.
	ev.Data = map[string]any{"task_id": "b", "state": "running", "runs": float64(1), "worktree": "/w/b"}
	d, _ = ev.TaskDetail()
	if text, _ := taskText("fan", d); text != "⇉ fan task b running (run 1) /w/b" {
		t.Fatal(text)
	}
}
