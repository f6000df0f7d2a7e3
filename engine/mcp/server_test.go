package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/engine"
)

// internalMessage is the only text an internal_error carries.
const internalMessage = "An unexpected error occurred."

func TestCallMapsFailures(t *testing.T) {
	var logBuf bytes.Buffer
	s := &server{log: slog.New(slog.NewTextHandler(&logBuf, nil))}
	ctx := context.Background()
	cases := []struct {
		name    string
		f       func() (engine.Response, error)
		errType string // "" = the response passes through
		isErr   bool
		logged  string
	}{
		{"response", func() (engine.Response, error) { return engine.Response{"status": "ok"}, nil }, "", false, ""},
		{"engine error envelope", func() (engine.Response, error) {
			return engine.Response{"status": "error", "error_type": "flow_not_found"}, nil
		}, "flow_not_found", false, ""},
		{"bad arguments", func() (engine.Response, error) { return nil, badArgs("x must be y") }, ErrTypeInvalidArguments, true, ""},
		{"store failure", func() (engine.Response, error) { return nil, errors.New("disk on fire /secret/path") }, ErrTypeInternal, true, "disk on fire"},
		{"panic", func() (engine.Response, error) { panic("boom /secret/path") }, ErrTypeInternal, true, "boom"},
		{"nil response", func() (engine.Response, error) { return nil, nil }, ErrTypeInternal, true, "no response"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			logBuf.Reset()
			raw, isErr, err := s.call(ctx, "tool_x", jsonOf(c.f))
			if err != nil {
				t.Fatal(err)
			}
			var resp map[string]any
			if err := json.Unmarshal(raw, &resp); err != nil {
				t.Fatalf("answer %q: %v", raw, err)
			}
			if isErr != c.isErr {
				t.Errorf("isErr = %v", isErr)
			}
			if c.errType != "" && resp["error_type"] != c.errType {
				t.Errorf("resp = %v", resp)
			}
			if c.errType == ErrTypeInternal {
				if resp["message"] != internalMessage || resp["success"] != false || len(resp) != 4 {
					t.Errorf("internal error leaks or lacks keys: %v", resp)
				}
				if !strings.Contains(logBuf.String(), c.logged) || !strings.Contains(logBuf.String(), "tool_x") {
					t.Errorf("log lacks the details: %s", logBuf.String())
				}
			}
			if c.errType == ErrTypeInvalidArguments && resp["message"] != "x must be y" {
				t.Errorf("resp = %v", resp)
			}
		})
	}
	// A cancelled call passes the cancellation through.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := s.call(cctx, "tool_x", jsonOf(func() (engine.Response, error) { return nil, cctx.Err() })); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v", err)
	}
}

// jsonOf is f as addTool hands it to call: its response's JSON.
func jsonOf(f func() (engine.Response, error)) func() (json.RawMessage, error) {
	return func() (json.RawMessage, error) {
		resp, err := f()
		if err != nil || resp == nil {
			return nil, err
		}
		return marshalResponse(resp)
	}
}
