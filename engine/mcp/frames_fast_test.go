package mcp

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// FuzzDecodeCommon: wherever decodeCommon takes a frame, the SDK's decoder
// makes the same request of it, and the id is the frame's id as written.
func FuzzDecodeCommon(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"x","arguments":{"s":"}\"{"}}}`,
		` { "method" : "notifications/initialized" , "jsonrpc" : "2.0" } `,
		`{"jsonrpc":"2.0","id":-1.5e3,"method":"x","params":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","id":2}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","Method":"y"}`,
		`{"jsonrpc":"2.0","id":1,"method":"x\u0041"}`,
		`{"jsonrpc":"2.0","id":null,"method":"x"}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","params":null}`,
		`{"jsonrpc":"2.0","id":1e999,"method":"x"}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if !json.Valid(line) {
			return
		}
		req, id, ok := decodeCommon(line)
		if !ok {
			return
		}
		m, err := jsonrpc.DecodeMessage(line)
		if err != nil {
			t.Fatalf("decodeCommon took %s, the SDK refuses it: %v", line, err)
		}
		want, isReq := m.(*jsonrpc.Request)
		if !isReq || want.Method != req.Method || want.ID != req.ID || string(want.Params) != string(req.Params) {
			t.Fatalf("%s: decodeCommon made %+v, the SDK %+v", line, req, m)
		}
		if got, present := idOf(line); string(got) != string(id) || present != (id != nil) {
			t.Fatalf("%s: id %q, the frame's %q", line, id, got)
		}
	})
}

// TestDecodeCommonForms: the common frames are taken, every other form is
// left to the SDK's decoder.
func TestDecodeCommonForms(t *testing.T) {
	for _, c := range []struct {
		line string
		want *jsonrpc.Request
	}{
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"n"}}`, &jsonrpc.Request{Method: "tools/call", Params: json.RawMessage(`{"name":"n"}`)}},
		{` {"method":"ping" ,"id":"x", "jsonrpc":"2.0"}`, &jsonrpc.Request{Method: "ping"}},
		{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`, &jsonrpc.Request{Method: "notifications/cancelled", Params: json.RawMessage(`{"requestId":1}`)}},
		{`{"jsonrpc":"2.0","id":1,"method":"x","id":2}`, nil},
		{`{"jsonrpc":"2.0","id":1,"method":"x\u0041"}`, nil},
		{`{"jsonrpc":"2.0","id":null,"method":"x"}`, nil},
		{`{"jsonrpc":"2.0","id":true,"method":"x"}`, nil},
		{`{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}`, nil},
		{`{"jsonrpc":"2.0","id":1,"method":"x","params":null}`, nil},
		{`{"jsonrpc":"1.0","id":1,"method":"x"}`, nil},
		{`{"jsonrpc":"2.0","id":1,"method":7}`, nil},
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, nil},
		{`{"jsonrpc":"2.0","id":1e999,"method":"x"}`, nil},
		{`[{"jsonrpc":"2.0","id":1,"method":"x"}]`, nil},
	} {
		req, _, ok := decodeCommon([]byte(c.line))
		if c.want == nil {
			if ok {
				t.Errorf("%s: taken as %+v, want it left to the SDK", c.line, req)
			}
			continue
		}
		if !ok {
			t.Errorf("%s: not taken", c.line)
			continue
		}
		m, _ := jsonrpc.DecodeMessage([]byte(c.line))
		c.want.ID = m.(*jsonrpc.Request).ID
		if !reflect.DeepEqual(req, c.want) {
			t.Errorf("%s: %+v, want %+v", c.line, req, c.want)
		}
	}
}
