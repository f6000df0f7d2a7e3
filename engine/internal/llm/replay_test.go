package llm

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recordOne makes one call through a Recorder on file against srv.
func recordOne(t *testing.T, rec *Recorder, url, prompt string) error {
	t.Helper()
	getenv := env(map[string]string{"OPENAI_API_KEY": "sk-secret", "OPENAI_BASE_URL": url})
	r := NewRouter(Config{Getenv: getenv, HTTPClient: &http.Client{Transport: rec}, Retry: testRetry(&noSleep{})})
	tg, err := r.Resolve("openai/gpt-4o-mini")
	if err != nil {
		t.Fatal(err)
	}
	_, err = tg.Provider.Complete(context.Background(), Request{Model: "gpt-4o-mini", Prompt: prompt, Schema: sentiment})
	return err
}

// An answer over the response cap fails the call as in a normal run and is
// not recorded (a 40 MB body gave a 402 MB record before).
func TestRecordRespectsResponseCap(t *testing.T) {
	huge := `{"pad": "` + strings.Repeat("x", maxResponseBytes+1<<20) + `"}`
	srv := newFake(t, reply(200, huge))
	file := filepath.Join(t.TempDir(), "run.replay.json")
	rec, err := NewRecorder(file)
	if err != nil {
		t.Fatal(err)
	}
	err = recordOne(t, rec, srv.URL, "Classify: big")
	if err == nil || !strings.Contains(err.Error(), "answer larger than 32 MiB") {
		t.Fatalf("err = %v, want the response cap", err)
	}
	st, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() > 4096 {
		t.Fatalf("the record is %d bytes: the oversized answer was recorded", st.Size())
	}
	if ex := rec.Exchanges(); len(ex) != 0 {
		t.Fatalf("recorded %d exchanges", len(ex))
	}
}

// The record grows by appending each exchange (never rewriting the file),
// and a record cut short by a process dying mid-write still replays.
func TestRecordAppendsAndSurvivesATruncatedTail(t *testing.T) {
	srv := newFake(t, reply(200, openAIAnswer(`{"label":"positive","confidence":0.9}`)))
	file := filepath.Join(t.TempDir(), "run.replay.json")
	rec, err := NewRecorder(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := recordOne(t, rec, srv.URL, "Classify: one"); err != nil {
		t.Fatal(err)
	}
	st1, _ := os.Stat(file)
	first, _ := os.ReadFile(file)
	if err := recordOne(t, rec, srv.URL, "Classify: two"); err != nil {
		t.Fatal(err)
	}
	st2, _ := os.Stat(file)
	second, _ := os.ReadFile(file)
	if !os.SameFile(st1, st2) || !strings.HasPrefix(string(second), string(first)) || len(second) <= len(first) {
		t.Fatalf("the second exchange did not append to the record (same file %v, %d then %d bytes)", os.SameFile(st1, st2), len(first), len(second))
	}
	// The process dies while writing a third exchange.
	f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"hash":"0123456789abcdef","model":"gpt-4o-mini","request":{"bo`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	rp, err := NewReplayer(file)
	if err != nil {
		t.Fatalf("a record with a cut-short last line: %v", err)
	}
	srv.Close()
	for _, prompt := range []string{"Classify: one", "Classify: two"} {
		r := NewRouter(Config{NoKeys: true, Getenv: env(nil), HTTPClient: &http.Client{Transport: rp}, Retry: testRetry(&noSleep{})})
		tg, _ := r.Resolve("openai/gpt-4o-mini")
		if _, err := tg.Provider.Complete(context.Background(), Request{Model: "gpt-4o-mini", Prompt: prompt, Schema: sentiment}); err != nil {
			t.Fatalf("replaying %q: %v", prompt, err)
		}
	}
}

// A format 1 record (one indented object, written before records became
// JSON Lines) still replays.
func TestReplayReadsFormat1(t *testing.T) {
	srv := newFake(t, reply(200, openAIAnswer(`{"label":"positive","confidence":0.9}`)))
	file := filepath.Join(t.TempDir(), "new.replay.json")
	rec, err := NewRecorder(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := recordOne(t, rec, srv.URL, "Classify: old"); err != nil {
		t.Fatal(err)
	}
	if err := rec.SetNote("a note"); err != nil {
		t.Fatal(err)
	}
	rec.Close()
	f, err := ReadReplayFile(file)
	if err != nil || len(f.Exchanges) != 1 || f.Note != "a note" || f.Version != ReplayFormat {
		t.Fatalf("format 2: %+v, %v", f, err)
	}
	f.Version = 1
	old, _ := json.MarshalIndent(f, "", "  ")
	oldFile := filepath.Join(t.TempDir(), "old.replay.json")
	if err := os.WriteFile(oldFile, old, 0o644); err != nil {
		t.Fatal(err)
	}
	rp, err := NewReplayer(oldFile)
	if err != nil {
		t.Fatal(err)
	}
	r := NewRouter(Config{NoKeys: true, Getenv: env(nil), HTTPClient: &http.Client{Transport: rp}, Retry: testRetry(&noSleep{})})
	tg, _ := r.Resolve("openai/gpt-4o-mini")
	if _, err := tg.Provider.Complete(context.Background(), Request{Model: "gpt-4o-mini", Prompt: "Classify: old", Schema: sentiment}); err != nil {
		t.Fatalf("replaying a format 1 record: %v", err)
	}
}

// The record is private to its owner (prompts carry the flow's inputs), as
// format 1's temporary-then-renamed file was.
func TestRecordFileMode(t *testing.T) {
	file := filepath.Join(t.TempDir(), "run.replay.json")
	rec, err := NewRecorder(file)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	st, err := os.Stat(file)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v", st.Mode(), err)
	}
}
