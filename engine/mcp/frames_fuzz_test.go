package mcp

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/stratum-go/stratum/engine/internal/jsonlimit"
)

// FuzzFrameGuard feeds arbitrary input to the guard of the stdio
// connection. It must never panic or stall, pass on only frames the SDK
// decodes without ending the session (valid JSON within the limits, a
// JSON-RPC message, not a batch), each as the message the SDK makes of it,
// and answer every other non-blank line
// with a JSON-RPC error of its own, so no line is silently lost.
func FuzzFrameGuard(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" + `{"id":2`,
		`[{"jsonrpc":"2.0","id":5,"method":"x"}]`,
		`{"jsonrpc":"2.0","id":"a","method":"x","params":` + strings.Repeat("[", jsonlimit.MaxDepth+1) + strings.Repeat("]", jsonlimit.MaxDepth+1) + `}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"stratum_step_done","arguments":{"result":` + strings.Repeat(`{"a":`, 1200) + `1` + strings.Repeat(`}`, 1200) + `}}}`,
		"\r\n\n \t\n",
		`{"jsonrpc":"2.0","id":1e999,"method":"x"}`,
		`{"jsonrpc":"1.0","id":null}`,
		"\"\\\"[[[[\"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var out bytes.Buffer
		tr := newStdioTransport(io.NopCloser(bytes.NewReader(in)), &out, slog.New(slog.NewTextHandler(io.Discard, nil)))
		type read struct {
			b   []byte
			err error
		}
		done := make(chan read, 1)
		go func() {
			b, err := readFrames(tr.guard)
			done <- read{b, err}
		}()
		var passed []byte
		select {
		case r := <-done:
			if r.err != nil {
				t.Fatal(r.err)
			}
			passed = r.b
		case <-time.After(5 * time.Second):
			t.Fatalf("the guard stalled on %d bytes: %.300q", len(in), in)
		}
		nPassed := 0
		for _, frame := range bytes.SplitAfter(passed, []byte("\n")) {
			if len(frame) == 0 {
				continue
			}
			nPassed++
			line := bytes.TrimSuffix(frame, []byte("\n"))
			if jsonlimit.Check(line) != nil || !json.Valid(line) || bytes.TrimSpace(line)[0] == '[' {
				t.Fatalf("passed on a frame the SDK would end the session on: %.200q", line)
			}
			if _, err := jsonrpc.DecodeMessage(line); err != nil {
				t.Fatalf("passed on a frame that is not a JSON-RPC message (%v): %.200q", err, line)
			}
		}
		nAnswered := 0
		if s := strings.TrimSpace(out.String()); s != "" {
			for _, a := range strings.Split(s, "\n") {
				if !json.Valid([]byte(a)) {
					t.Fatalf("answer is not JSON: %q", a)
				}
				nAnswered++
			}
		}
		nLines := 0
		for _, line := range bytes.Split(in, []byte("\n")) {
			if len(bytes.TrimSpace(bytes.TrimRight(line, "\r"))) > 0 {
				nLines++
			}
		}
		if nPassed+nAnswered != nLines {
			t.Fatalf("%d non-blank lines, %d passed on, %d answered: %q", nLines, nPassed, nAnswered, in)
		}
	})
}
