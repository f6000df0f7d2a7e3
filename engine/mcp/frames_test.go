package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/stratum-go/stratum/engine/internal/jsonlimit"
)

func TestFrameID(t *testing.T) {
	tests := []struct{ line, want string }{
		{`{"jsonrpc":"2.0","id":7,"method":"x"}`, `7`},
		{`{"jsonrpc":"2.0","method":"x","params":{"id":1,"a":[[[{}]]]},"id":"s-1"}`, `"s-1"`},
		{`{"id":{"nested":1}}`, ``},
		{`{"method":"x"}`, ``},
		{`{"jsonrpc":"2.0","id":3,"params":` + strings.Repeat("[", 20000), `3`},
		{`{"jsonrpc":"2.0","params":` + strings.Repeat("[", 20000), ``},
		{`[{"id":1}]`, ``},
		{`not json`, ``},
	}
	for _, tt := range tests {
		if got := string(frameID([]byte(tt.line))); got != tt.want {
			t.Errorf("frameID(%.60s) = %q, want %q", tt.line, got, tt.want)
		}
	}
}

// TestFrameGuard: accepted frames pass through unchanged, one per line;
// refused ones are answered on the output and dropped.
func TestFrameGuard(t *testing.T) {
	ok1 := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	ok2 := `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	deep := `{"jsonrpc":"2.0","id":2,"method":"x","params":` + strings.Repeat("[", jsonlimit.MaxDepth+1) + strings.Repeat("]", jsonlimit.MaxDepth+1) + `}`
	big := `{"jsonrpc":"2.0","id":3,"method":"x","params":{"s":"` + strings.Repeat("a", jsonlimit.MaxBytes) + `"}}`
	in := ok1 + "\r\n\n" + deep + "\n" + big + "\n" + `{"id":4` + "\n" + `[{"jsonrpc":"2.0","id":5,"method":"x"},{"jsonrpc":"2.0","id":6,"method":"y"}]` + "\n" + ok2
	var out bytes.Buffer
	tr := newStdioTransport(io.NopCloser(strings.NewReader(in)), &out, slog.New(slog.NewTextHandler(io.Discard, nil)))
	passed, err := readFrames(tr.guard)
	if err != nil {
		t.Fatal(err)
	}
	if string(passed) != ok1+"\n"+ok2+"\n" {
		t.Fatalf("passed on %.200q", passed)
	}
	var answers []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var one rpcError
		var many []rpcError
		if json.Unmarshal([]byte(line), &many) == nil {
			for _, m := range many {
				answers = append(answers, string(m.ID)+" "+m.Error.Message)
			}
		} else if json.Unmarshal([]byte(line), &one) == nil {
			answers = append(answers, string(one.ID)+" "+one.Error.Message)
		} else {
			t.Fatalf("answer is not JSON: %q", line)
		}
	}
	want := []string{
		"2 request refused: JSON is nested deeper than 256 levels",
		"3 request refused: JSON is larger than 16 MiB (16777216 bytes)",
		"4 parse error: the frame is not valid JSON",
		"5 request refused: batch requests are not supported",
		"6 request refused: batch requests are not supported",
	}
	if strings.Join(answers, "\n") != strings.Join(want, "\n") {
		t.Fatalf("answers:\n%s\nwant:\n%s", strings.Join(answers, "\n"), strings.Join(want, "\n"))
	}
}

// readFrames reads the guard to the end of its input: the accepted frames,
// each with a newline. Each frame's message must be the one
// jsonrpc.DecodeMessage makes of it (the one the SDK's connection made).
func readFrames(g *frameGuard) ([]byte, error) {
	var passed []byte
	for {
		line, msg, err := g.next()
		if errors.Is(err, io.EOF) {
			return passed, nil
		}
		if err != nil {
			return passed, err
		}
		want, err := jsonrpc.DecodeMessage(line)
		if err != nil {
			return passed, fmt.Errorf("accepted a frame DecodeMessage refuses (%v): %.200q", err, line)
		}
		if !reflect.DeepEqual(msg, want) {
			return passed, fmt.Errorf("frame %.200q decoded to %#v, DecodeMessage makes %#v", line, msg, want)
		}
		passed = append(append(passed, line...), '\n')
	}
}
