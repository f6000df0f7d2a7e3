package tui

import (
	"encoding/json"
	"testing"

	"github.com/stratum-go/stratum/engine"
)

func TestTaskRowText(t *testing.T) {
	task := engine.ParallelTask{
		TaskID: "b", State: "failed", Runs: 2, DurationMS: 1500, Branch: "stratum/1234/fan/b",
		Violations: []string{"task 'b': command exited with status 1"}}
	text, detail := taskText("fan", &task)
	if want := "⇉ fan task b failed (run 2) 1.5s stratum/1234/fan/b"; text != want {
		t.Fatalf("row %q, want %q", text, want)
	}
	if detail != "task 'b': command exited with status 1" {
		t.Fatalf("detail %q", detail)
	}
	// Read back from the log the same way.
	var stored engine.Event
	if err := json.Unmarshal([]byte(`{"type":"parallel_task","data":{"task_id":"b","state":"running","runs":1,"worktree":"/w/b"}}`), &stored); err != nil {
		t.Fatal(err)
	}
	got, _ := stored.Data.(engine.ParallelTask)
	if text, _ := taskText("fan", &got); text != "⇉ fan task b running (run 1) /w/b" {
		t.Fatal(text)
	}
}
